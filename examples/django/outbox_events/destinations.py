"""Destinations the CRM creates at run time: `set_destination` writes an entry
of the dispatcher's registry (sql/0010_destination_registry.sql), e.g. when a
project is created, and every running dispatcher applies it within seconds.

    from outbox_events import set_destination
    set_destination("meta", "project_17", {"pixel_id": "1234567890"},
                    secrets={"access_token": token}, actor="crm:project-setup")

Secrets are sealed for the dispatcher's published key before they reach the
database (outbox_events/sealing.py): the CRM can write a token, never read one
back. The keys are those of the dispatcher's OUTBOX_DEST__ variables, lower-case
("url", "pixel_id", "concurrency", "header__x-tenant"). This module checks what
it can without the dispatcher (names, known providers, each key's provider,
secrets kept out of the plain settings); the dispatcher checks the rest, and an
entry it cannot use stops only that destination, with the reason in
`dispatcher status` (docs/destinations.md).

`registry_fanout("project_17")` lists a project's enabled destinations for
enqueue_fanout; `remove_destination` deletes one as `dispatcher destination
remove` does. The admin pages (destination_admin.py) go through these too.
"""

from __future__ import annotations

import json
from typing import Dict, List, Mapping, Optional, Tuple

from django.db import DEFAULT_DB_ALIAS, connections, transaction

from . import sealing
from .conf import check_name
from .errors import DestinationInUseError

# The dispatcher's keys per provider kind (each provider's *_setting_keys) and the common ones
# (dispatcher/config/config_destinations.cpp); a header is "header__<name>". A test
# (tests/dispatcher/secrets/sealed_secret_test.cpp) fails when these lists and the dispatcher's differ.
COMMON_KEYS = frozenset({"concurrency", "rate_per_second", "burst", "paused", "max_4xx_share"})
PROVIDER_KEYS = {
    "webhook": frozenset({"url", "secret"}),
    "meta": frozenset({"pixel_id", "access_token", "app_secret", "api_version", "base_url", "batch_size",
                       "test_event_code", "lead_event_source", "default_phone_country_code", "on_expired_lease"}),
    "tiktok": frozenset({"access_token", "event_source", "event_source_id", "base_url", "test_event_code",
                         "batch_size", "default_phone_country_code", "lead_event_source", "max_event_age_days"}),
    "google_ads": frozenset({"customer_id", "conversion_action_id", "login_customer_id", "developer_token",
                             "client_id", "client_secret", "refresh_token", "token_url", "base_url", "api_version",
                             "validate_only", "batch_size", "default_phone_country_code"}),
    "google_data_manager": frozenset({"account_id", "conversion_action_id", "login_account_id", "client_id",
                                      "client_secret", "refresh_token", "token_url", "base_url", "validate_only",
                                      "batch_size", "default_phone_country_code", "status_check_delay_seconds"}),
}
# As dispatcher/config/destination_check.cpp's is_secret_setting.
SECRET_KEYS = frozenset({"secret", "access_token", "app_secret", "client_secret", "refresh_token", "developer_token"})
_SECRET_HEADER_MARKERS = ("secret", "token", "password", "passwd", "key", "auth", "cookie", "credential")

_CURRENT_KEY = "SELECT key_id, public_key FROM outbox_sealing_key WHERE is_current"
# As the dispatcher's `destination set` (db/destination_registry_store.cpp): the advisory lock on the
# name orders two writers of an entry that does not exist yet, FOR UPDATE one that does.
_ADVISORY = "SELECT pg_advisory_xact_lock(hashtextextended('outbox_destination:' || %s || '/' || %s, 0))"
_LOCK = "SELECT settings::text, secrets::text FROM outbox_destination WHERE provider = %s AND name = %s FOR UPDATE"
_PUT = """
INSERT INTO outbox_destination (provider, name, settings, secrets, enabled, updated_by)
VALUES (%s, %s, %s::jsonb, %s::jsonb, %s, %s)
ON CONFLICT (provider, name) DO UPDATE SET
    settings = EXCLUDED.settings, secrets = EXCLUDED.secrets, enabled = EXCLUDED.enabled,
    updated_at = now(), updated_by = EXCLUDED.updated_by"""


def registry_key(key) -> str:
    """Lower-case; a header's name with '-' for '_', as `dispatcher destination set` writes it."""
    key = str(key).lower()
    if key.startswith("header__"):
        key = "header__" + key[len("header__"):].replace("_", "-")
    return key


def is_secret_key(key: str) -> bool:
    if key.startswith("header__"):
        header = key[len("header__"):].replace("-", "_")
        return any(marker in header for marker in _SECRET_HEADER_MARKERS)
    return key in SECRET_KEYS


def _check_keys(provider: str, keys, secret: bool) -> None:
    known = PROVIDER_KEYS[provider] | COMMON_KEYS
    for key in keys:
        if not isinstance(key, str) or not (key in known or key.startswith("header__")):
            raise ValueError(f"unknown setting {key!r} for a {provider} destination (known: {', '.join(sorted(known))})")
        if not secret and is_secret_key(key):
            raise ValueError(f"{key!r} is a secret: pass it in secrets=, which are sealed, never in settings=")


def check_destination(
    provider: str, name: str, settings: Optional[Mapping[str, str]] = None, secrets: Optional[Mapping[str, str]] = None
) -> Tuple[Dict[str, str], Dict[str, str]]:
    """The checks of set_destination, without the database (the admin's form runs
    them to show a form error): returns the settings and secrets with their keys
    as the registry spells them, or raises ValueError."""
    check_name("provider", provider)
    check_name("destination", name)
    if provider not in PROVIDER_KEYS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(sorted(PROVIDER_KEYS))})")
    settings = {registry_key(k): str(v) for k, v in (settings or {}).items()}
    secrets = {registry_key(k): str(v) for k, v in (secrets or {}).items()}
    _check_keys(provider, settings, secret=False)
    _check_keys(provider, secrets, secret=True)
    return settings, secrets


def set_destination(
    provider: str,
    name: str,
    settings: Optional[Mapping[str, str]] = None,
    secrets: Optional[Mapping[str, str]] = None,
    enabled: bool = True,
    actor: str = "django",
    using: str = DEFAULT_DB_ALIAS,
) -> None:
    """Creates or changes a destination: the keys given replace theirs, an empty
    value removes one, the others stay. Raises ValueError for what can never be
    valid, and LookupError when a secret is given but no sealing key is
    published (`dispatcher keys publish`)."""
    settings, secrets = check_destination(provider, name, settings, secrets)
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        sealed = {}
        if any(secrets.values()):
            cursor.execute(_CURRENT_KEY)
            row = cursor.fetchone()
            if row is None:
                raise LookupError("no sealing key is published: run `dispatcher keys publish` where the key file is")
            key_id, public_key = row[0], bytes(row[1])
            for key, value in secrets.items():
                if value:
                    sealed[key] = sealing.seal(public_key, value, sealing.context(provider, name, key))
        cursor.execute(_ADVISORY, [provider, name])
        cursor.execute(_LOCK, [provider, name])
        row = cursor.fetchone()
        current_settings = json.loads(row[0]) if row else {}
        current_secrets = json.loads(row[1]) if row else {}
        for key, value in settings.items():
            current_secrets.pop(key, None)
            if value:
                current_settings[key] = value
            else:
                current_settings.pop(key, None)
        for key, value in secrets.items():
            current_settings.pop(key, None)
            if value:
                current_secrets[key] = sealed[key]
            else:
                current_secrets.pop(key, None)
        cursor.execute(_PUT, [provider, name, json.dumps(current_settings), json.dumps(current_secrets), enabled, actor])


_ENABLED_NAMED = "SELECT provider FROM outbox_destination WHERE name = %s AND enabled ORDER BY provider"
# As `dispatcher destination remove` (db/destination_registry_store.cpp): rows not final are pending or sending.
_UNFINISHED = "SELECT count(*) FROM event_delivery WHERE final_state IS NULL AND provider = %s AND destination = %s"
_REMOVE = "DELETE FROM outbox_destination WHERE provider = %s AND name = %s"


def registry_fanout(name: str, using: str = DEFAULT_DB_ALIAS) -> List[Tuple[str, str]]:
    """The (provider, name) pairs of the enabled registry entries called `name`,
    for enqueue_fanout(..., providers=registry_fanout("project_17")). One entry
    per provider at most (the table's key), so the fan-out never names a provider
    twice. A disabled entry is left out: its events are not enqueued at all
    (disabling keeps rows already enqueued waiting, it does not queue new ones)."""
    check_name("destination", name)
    with connections[using].cursor() as cursor:
        cursor.execute(_ENABLED_NAMED, [name])
        return [(provider, name) for (provider,) in cursor.fetchall()]


def sealing_key_published(using: str = DEFAULT_DB_ALIAS) -> bool:
    with connections[using].cursor() as cursor:
        cursor.execute(_CURRENT_KEY)
        return cursor.fetchone() is not None


def unfinished_rows(provider: str, name: str, using: str = DEFAULT_DB_ALIAS) -> int:
    """How many event_delivery rows for the destination are pending or sending."""
    with connections[using].cursor() as cursor:
        cursor.execute(_UNFINISHED, [provider, name])
        return cursor.fetchone()[0]


def remove_destination(provider: str, name: str, force: bool = False, using: str = DEFAULT_DB_ALIAS) -> int:
    """Deletes a registry entry as `dispatcher destination remove` does: refused
    (DestinationInUseError) while rows are pending or sending for it, unless
    `force` (they then wait as rows of an unknown destination do). Returns the
    number of such rows; LookupError when there is no such entry."""
    check_name("provider", provider)
    check_name("destination", name)
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute(_ADVISORY, [provider, name])  # ordered with a set_destination of the same entry
        rows = unfinished_rows(provider, name, using)
        if rows and not force:
            raise DestinationInUseError(
                f"refused: {rows} row(s) are still pending or sending for {provider}/{name}; disable it instead "
                "(its rows wait), or remove it once they are sent",
                rows=rows,
            )
        cursor.execute(_REMOVE, [provider, name])
        if cursor.rowcount == 0:
            raise LookupError(f"{provider}/{name} is not in the registry")
    return rows
