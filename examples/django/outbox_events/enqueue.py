"""Enqueueing outbox events: one SQL call per row, in the caller's transaction.

Nothing here opens, commits or rolls back a transaction, and nothing switches
autocommit: the statements run on `connections[using].cursor()`, so they are
part of whatever transaction the caller has open (normally a
`transaction.atomic()` block that also writes the lead). If that transaction
rolls back, the rows never existed and nothing is sent; once it commits, the
dispatcher delivers them. Outside any atomic block (Django's autocommit), each
call commits on its own, like any other query.
"""

import json
import re
from collections.abc import Mapping

from django.core.serializers.json import DjangoJSONEncoder
from django.db import DEFAULT_DB_ALIAS, connections

# The fan-out of `enqueue_fanout` when the caller names no providers:
# (provider, destination) pairs, each configured on the dispatcher as
# OUTBOX_DEST__<PROVIDER>__<DESTINATION>__...
# Google goes through the Data Manager API: since 2026-06-15 the Google Ads API
# refuses click-conversion uploads from integrations that were not already
# using it (CUSTOMER_NOT_ALLOWLISTED_FOR_THIS_FEATURE). An account still
# allowlisted there passes providers=[..., ("google_ads", "default")] instead.
DEFAULT_FANOUT_PROVIDERS = (
    ("meta", "default"),
    ("tiktok", "default"),
    ("google_data_manager", "default"),
)

# The dispatcher stores configured provider and destination names lower-case;
# a row spelled any other way matches no destination and ends `dead`.
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9_]*[a-z0-9])?\Z")

_ENQUEUE_ONE = "SELECT enqueue_event_delivery(%s, %s, %s, %s::jsonb, %s)"

# One statement for a whole fan-out: one enqueue_event_delivery call per
# (provider, destination) pair, each true when its row is new.
_ENQUEUE_FANOUT = """
SELECT p.provider, enqueue_event_delivery(%s, p.provider, %s, %s::jsonb, p.destination)
FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS p(provider, destination, n)
ORDER BY p.n
"""


def enqueue_event(lead_project_id, provider, event_name, payload, destination=None, using=DEFAULT_DB_ALIAS):
    """Enqueue one event for one provider; return True when the row is new.

    False means a row for (lead_project_id, provider, event_name) already
    exists (committed, or written earlier in this transaction): it is left
    untouched, payload included, and will not be sent a second time.

    `payload` is the canonical event (a dict, see docs/providers.md), serialised
    with DjangoJSONEncoder, so datetimes, dates, Decimals and UUIDs may be used
    as values. `destination` None means the destination named "default".
    """
    _check_lead(lead_project_id)
    _check_name("provider", provider)
    if destination is not None:
        _check_name("destination", destination)
    _check_event_name(event_name)
    body = _serialise(payload)
    with connections[using].cursor() as cursor:
        cursor.execute(_ENQUEUE_ONE, [lead_project_id, provider, event_name, body, destination])
        (is_new,) = cursor.fetchone()
    return bool(is_new)


def enqueue_fanout(lead_project_id, event_name, payload, providers=DEFAULT_FANOUT_PROVIDERS, using=DEFAULT_DB_ALIAS):
    """Enqueue the same event for several providers in one statement.

    `providers` is a sequence of (provider, destination) pairs; a bare
    provider name means its "default" destination. Returns
    {provider: True when its row is new, False when it already existed}.

    A provider may appear once: there is one row per (lead, provider, event),
    so a second destination of the same provider would always be a duplicate.
    """
    _check_lead(lead_project_id)
    _check_event_name(event_name)
    names, destinations = [], []
    for item in providers:
        provider, destination = (item, "default") if isinstance(item, str) else tuple(item)
        _check_name("provider", provider)
        _check_name("destination", destination)
        if provider in names:
            raise ValueError(
                f"provider {provider!r} appears twice in the fan-out: there is one row per "
                "(lead, provider, event), so the second would never be sent"
            )
        names.append(provider)
        destinations.append(destination)
    if not names:
        return {}
    body = _serialise(payload)
    with connections[using].cursor() as cursor:
        cursor.execute(_ENQUEUE_FANOUT, [lead_project_id, event_name, body, names, destinations])
        return {provider: bool(is_new) for provider, is_new in cursor.fetchall()}


def _serialise(payload):
    if not isinstance(payload, Mapping):
        raise TypeError(f"payload must be a dict (the canonical event), not {type(payload).__name__}")
    # allow_nan=False: NaN and Infinity are not JSON, and PostgreSQL would refuse them.
    return json.dumps(payload, cls=DjangoJSONEncoder, allow_nan=False, ensure_ascii=False)


def _check_lead(lead_project_id):
    if isinstance(lead_project_id, bool) or not isinstance(lead_project_id, int):
        raise TypeError(f"lead_project_id must be an int, not {type(lead_project_id).__name__}")


def _check_event_name(event_name):
    if not isinstance(event_name, str) or not event_name.strip():
        raise ValueError("event_name must be a non-empty string")


def _check_name(what, value):
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(
            f"{what} must be lower-case letters, digits and '_' (as configured on the dispatcher), got {value!r}"
        )
