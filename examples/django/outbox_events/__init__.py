"""Enqueue outbox events for the outbox dispatcher from Django.

    from outbox_events import enqueue_event, enqueue_fanout

Both functions insert `event_delivery` rows through the SQL function
`enqueue_event_delivery(...)` on the caller's connection, inside the caller's
transaction: the rows exist exactly when the caller's transaction commits.
The models `outbox_events.models.EventDelivery` and `EventDeliveryAttempt`
read those rows; the app's migration 0002 applies the dispatcher's schema
(see outbox_events/schema.py); settings.OUTBOX_EVENTS is described in
outbox_events/conf.py.
"""

# The same names as outbox_events.api, which lists them once.
from .api import *  # noqa: F401,F403
from .api import __all__  # noqa: F401
