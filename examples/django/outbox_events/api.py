"""The public API, for `from outbox_events.api import enqueue_event`."""

from .conf import DEFAULT_FANOUT_PROVIDERS, ProviderSpec, default_fanout
from .destinations import registry_fanout, remove_destination, set_destination
from .enqueue import enqueue_event, enqueue_fanout
from .forget import ForgetReport, forget_lead
from .errors import (
    DestinationConflictError,
    DestinationInUseError,
    DuplicateProviderError,
    ReadOnlyError,
    SchemaMissingError,
)

__all__ = [
    "DEFAULT_FANOUT_PROVIDERS",
    "DestinationConflictError",
    "DestinationInUseError",
    "DuplicateProviderError",
    "ForgetReport",
    "ProviderSpec",
    "ReadOnlyError",
    "SchemaMissingError",
    "default_fanout",
    "enqueue_event",
    "enqueue_fanout",
    "forget_lead",
    "registry_fanout",
    "remove_destination",
    "set_destination",
]
