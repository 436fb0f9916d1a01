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

from .conf import DEFAULT_FANOUT_PROVIDERS, ProviderSpec, default_fanout
from .enqueue import enqueue_event, enqueue_fanout
from .errors import DestinationConflictError, DuplicateProviderError, ReadOnlyError, SchemaMissingError

__all__ = [
    "DEFAULT_FANOUT_PROVIDERS",
    "DestinationConflictError",
    "DuplicateProviderError",
    "ProviderSpec",
    "ReadOnlyError",
    "SchemaMissingError",
    "default_fanout",
    "enqueue_event",
    "enqueue_fanout",
]
