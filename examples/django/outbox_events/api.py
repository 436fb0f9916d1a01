"""The public API, for `from outbox_events.api import enqueue_event`."""

from .enqueue import DEFAULT_FANOUT_PROVIDERS, enqueue_event, enqueue_fanout

__all__ = ["DEFAULT_FANOUT_PROVIDERS", "enqueue_event", "enqueue_fanout"]
