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
"""

from __future__ import annotations

import json
from typing import Mapping, Optional

from django.db import DEFAULT_DB_ALIAS, connections, transaction

from . import sealing
from .conf import check_name

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


def _registry_key(key) -> str:
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
    check_name("provider", provider)
    check_name("destination", name)
    if provider not in PROVIDER_KEYS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(sorted(PROVIDER_KEYS))})")
    settings = {_registry_key(k): str(v) for k, v in (settings or {}).items()}
    secrets = {_registry_key(k): str(v) for k, v in (secrets or {}).items()}
    _check_keys(provider, settings, secret=False)
    _check_keys(provider, secrets, secret=True)
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
