"""Enqueue outbox events for the outbox dispatcher from Django.

    from outbox_events import enqueue_event, enqueue_fanout

Both functions insert `event_delivery` rows through the SQL function
`enqueue_event_delivery(...)` on the caller's connection, inside the caller's
transaction: the rows exist exactly when the caller's transaction commits.
The model `outbox_events.models.EventDelivery` reads those rows.
"""

from .enqueue import DEFAULT_FANOUT_PROVIDERS, enqueue_event, enqueue_fanout

__all__ = ["DEFAULT_FANOUT_PROVIDERS", "enqueue_event", "enqueue_fanout"]
