"""The errors outbox_events raises, each with a message that says what to do."""

from django.db import ProgrammingError


class SchemaMissingError(ProgrammingError):
    """The database has no dispatcher schema (enqueue_event_delivery(...) or its tables).

    A ProgrammingError, so code that catches Django's DatabaseError still does.
    """


class DuplicateProviderError(ValueError):
    """One fan-out names the same provider twice: a row is unique per (lead, provider, event)."""


class DestinationConflictError(ValueError):
    """The event already has a row for this provider, to another destination.

    A row is unique per (lead, provider, event), whatever the destination, so
    the destination asked for would never get the event.
    """

    def __init__(self, message: str, provider: str, existing_destination: str, requested_destination: str):
        super().__init__(message)
        self.provider = provider
        self.existing_destination = existing_destination
        self.requested_destination = requested_destination


class ReadOnlyError(TypeError):
    """Saving, updating or deleting event_delivery rows through the ORM."""


class DestinationInUseError(ValueError):
    """Removing a registry destination while rows are still pending or sending for it.

    `rows` is their number; disabling the destination instead keeps them waiting.
    """

    def __init__(self, message: str, rows: int):
        super().__init__(message)
        self.rows = rows
