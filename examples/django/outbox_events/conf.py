"""The app's one Django setting, read and checked in one place.

    OUTBOX_EVENTS = {
        # What enqueue_fanout(...) sends to when the caller names no providers:
        # (provider, destination) pairs or bare provider names ("default" destination).
        "DEFAULT_FANOUT": [("meta", "default"), ("tiktok", "default"), ("google_data_manager", "default")],
        # Where the dispatcher's sql/NNNN_*.sql migrations are; None: the copy the
        # package carries (outbox_events/sql/, put there when the package is built).
        "SCHEMA_DIR": None,
        # True: `manage.py migrate` (and so Django's test database creation) applies
        # them; False: it only checks that `dispatcher migrate` already did.
        "APPLY_SCHEMA": True,
    }

Every key is optional. The setting is read at each use, so `override_settings`
works in tests; a wrong value raises ImproperlyConfigured (and `manage.py check`
reports it as outbox_events.E001).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Optional, Tuple, Union

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from .errors import DuplicateProviderError

# A fan-out entry: "meta" (its "default" destination) or ("webhook", "crm_hook").
ProviderSpec = Union[str, Tuple[str, str]]
Pair = Tuple[str, str]

# The built-in fan-out. Google goes through the Data Manager API: since
# 2026-06-15 the Google Ads API refuses click-conversion uploads from
# integrations that were not already using it (CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE).
DEFAULT_FANOUT_PROVIDERS: Tuple[Pair, ...] = (
    ("meta", "default"),
    ("tiktok", "default"),
    ("google_data_manager", "default"),
)

SETTING = "OUTBOX_EVENTS"
_KNOWN_KEYS = ("DEFAULT_FANOUT", "SCHEMA_DIR", "APPLY_SCHEMA")

# The dispatcher stores configured provider and destination names lower-case;
# a row spelled any other way matches no destination and ends `dead`.
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9_]*[a-z0-9])?\Z")


def check_name(what: str, value: object) -> str:
    """Returns `value` when it is a valid provider or destination name, else raises ValueError."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(
            f"{what} must be lower-case letters, digits and '_' (as configured on the dispatcher), got {value!r}"
        )
    return value


def normalise_providers(providers: Iterable[ProviderSpec]) -> Tuple[Pair, ...]:
    """(provider, destination) pairs from a fan-out list; raises TypeError or ValueError."""
    if isinstance(providers, (str, bytes)):
        # A bare string is iterable: "webhook" would fan out to "w", "e", "b"...
        raise TypeError(
            f"providers must be a list of provider names or (provider, destination) pairs, not a string: "
            f"write providers=[{providers!r}]"
        )
    if isinstance(providers, Mapping) or not isinstance(providers, Iterable):
        raise TypeError(
            "providers must be a list of provider names or (provider, destination) pairs, "
            f"not {type(providers).__name__}"
        )
    pairs = []
    for item in providers:
        pair = _pair(item)
        clash = next((p for p in pairs if p[0] == pair[0]), None)
        if clash is not None:
            raise DuplicateProviderError(
                f"provider {pair[0]!r} appears twice in the fan-out (destinations {clash[1]!r} and {pair[1]!r}): "
                "an event_delivery row is unique per (lead, provider, event), whatever the destination, "
                "so the second destination would never get a row"
            )
        pairs.append(pair)
    return tuple(pairs)


def _pair(item: object) -> Pair:
    if isinstance(item, str):
        return check_name("provider", item), "default"
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return check_name("provider", item[0]), check_name("destination", item[1])
    raise TypeError(f"a fan-out entry is a provider name or a (provider, destination) pair, got {item!r}")


def _raw() -> Mapping[str, Any]:
    value = getattr(settings, SETTING, None)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ImproperlyConfigured(f"settings.{SETTING} must be a dict, not {type(value).__name__}")
    unknown = sorted(set(value) - set(_KNOWN_KEYS))
    if unknown:
        raise ImproperlyConfigured(
            f"settings.{SETTING} has unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(_KNOWN_KEYS)}"
        )
    return value


def default_fanout() -> Tuple[Pair, ...]:
    """The fan-out of enqueue_fanout(...) without providers: settings.OUTBOX_EVENTS["DEFAULT_FANOUT"] or the built-in one."""
    value = _raw().get("DEFAULT_FANOUT", DEFAULT_FANOUT_PROVIDERS)
    try:
        pairs = normalise_providers(value)
    except (TypeError, ValueError) as error:
        raise ImproperlyConfigured(f"settings.{SETTING}['DEFAULT_FANOUT']: {error}") from error
    if not pairs:
        raise ImproperlyConfigured(f"settings.{SETTING}['DEFAULT_FANOUT'] is empty: name at least one provider")
    return pairs


def schema_dir() -> Path:
    """Where the dispatcher's migrations are read from: SCHEMA_DIR, else the package's own copy."""
    value = _raw().get("SCHEMA_DIR")
    if value is None:
        return Path(__file__).resolve().parent / "sql"
    if not isinstance(value, (str, Path)):
        raise ImproperlyConfigured(f"settings.{SETTING}['SCHEMA_DIR'] must be a path, not {type(value).__name__}")
    return Path(value)


def apply_schema() -> bool:
    value = _raw().get("APPLY_SCHEMA", True)
    if not isinstance(value, bool):
        raise ImproperlyConfigured(f"settings.{SETTING}['APPLY_SCHEMA'] must be True or False, got {value!r}")
    return value


def check_settings() -> Optional[str]:
    """The first problem with settings.OUTBOX_EVENTS, or None (for the system check)."""
    try:
        default_fanout()
        schema_dir()
        apply_schema()
    except ImproperlyConfigured as error:
        return str(error)
    return None
