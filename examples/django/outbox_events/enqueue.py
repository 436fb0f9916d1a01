"""Enqueueing outbox events: one SQL call per row, in the caller's transaction.

Nothing here opens, commits or rolls back a transaction, and nothing switches
autocommit: the statements run on `connections[using].cursor()`, so they are
part of whatever transaction the caller has open (normally a
`transaction.atomic()` block that also writes the lead). If that transaction
rolls back, the rows never existed and nothing is sent; once it commits, the
dispatcher delivers them. Outside any atomic block (Django's autocommit), each
call commits on its own, like any other query.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Dict, List, Optional, Sequence

from django.core.serializers.json import DjangoJSONEncoder
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from .conf import DEFAULT_FANOUT_PROVIDERS, Pair, ProviderSpec, check_name, default_fanout, normalise_providers
from .errors import DestinationConflictError, SchemaMissingError

__all__ = ["DEFAULT_FANOUT_PROVIDERS", "default_fanout", "enqueue_event", "enqueue_fanout"]

_ENQUEUE_ONE = "SELECT enqueue_event_delivery(%s, %s, %s, %s::jsonb, %s)"

# One statement for a whole fan-out: one enqueue_event_delivery call per
# (provider, destination) pair, each true when its row is new.
_ENQUEUE_FANOUT = """
SELECT p.provider, enqueue_event_delivery(%s, p.provider, %s, %s::jsonb, p.destination)
FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS p(provider, destination, n)
ORDER BY p.n
"""

# Run only when a call returned False: which destination the existing rows have.
_EXISTING_DESTINATIONS = """
SELECT provider, destination FROM event_delivery
WHERE lead_project_id = %s AND event_name = %s AND provider = ANY(%s::text[])
"""

# SQLSTATEs of a database without the dispatcher's schema.
_UNDEFINED_FUNCTION = "42883"
_UNDEFINED_TABLE = "42P01"


def enqueue_event(
    lead_project_id: int,
    provider: str,
    event_name: str,
    payload: Mapping[str, Any],
    destination: Optional[str] = None,
    using: str = DEFAULT_DB_ALIAS,
) -> bool:
    """Enqueue one event for one provider; return True when the row is new.

    False means a row for (lead_project_id, provider, event_name) already
    exists (committed, or written earlier in this transaction) for the same
    destination: it is left untouched, payload included, and will not be sent
    a second time. When that row is for another destination of the provider,
    DestinationConflictError is raised: the destination asked for would never
    get the event.

    `payload` is the canonical event (a dict, see docs/providers.md), serialised
    with DjangoJSONEncoder, so datetimes, dates, Decimals and UUIDs may be used
    as values. `destination` None means the destination named "default".
    """
    _check_lead(lead_project_id)
    check_name("provider", provider)
    wanted = "default" if destination is None else check_name("destination", destination)
    _check_event_name(event_name)
    body = _serialise(payload)
    with connections[using].cursor() as cursor:
        _execute(cursor, using, _ENQUEUE_ONE, [lead_project_id, provider, event_name, body, wanted])
        (is_new,) = cursor.fetchone()
        if not is_new:
            _check_destinations(cursor, lead_project_id, event_name, [(provider, wanted)])
    return bool(is_new)


def enqueue_fanout(
    lead_project_id: int,
    event_name: str,
    payload: Mapping[str, Any],
    providers: Optional[Iterable[ProviderSpec]] = None,
    using: str = DEFAULT_DB_ALIAS,
) -> Dict[str, bool]:
    """Enqueue the same event for several providers in one statement.

    `providers` is a list of (provider, destination) pairs; a bare provider
    name means its "default" destination. None means the default fan-out:
    settings.OUTBOX_EVENTS["DEFAULT_FANOUT"], else meta, tiktok and
    google_data_manager. Returns {provider: True when its row is new, False
    when it already existed}.

    A provider may appear once (DuplicateProviderError): there is one row per
    (lead, provider, event), so a second destination of the same provider would
    never get a row. For the same reason, an existing row to another
    destination raises DestinationConflictError.
    """
    _check_lead(lead_project_id)
    _check_event_name(event_name)
    pairs = default_fanout() if providers is None else normalise_providers(providers)
    if not pairs:
        return {}
    body = _serialise(payload)
    names = [p for p, _ in pairs]
    destinations = [d for _, d in pairs]
    with connections[using].cursor() as cursor:
        _execute(cursor, using, _ENQUEUE_FANOUT, [lead_project_id, event_name, body, names, destinations])
        results = {provider: bool(is_new) for provider, is_new in cursor.fetchall()}
        existing = [pair for pair in pairs if not results[pair[0]]]
        if existing:
            _check_destinations(cursor, lead_project_id, event_name, existing)
    return results


def _execute(cursor, using: str, statement: str, args: Sequence[Any]) -> None:
    try:
        cursor.execute(statement, args)
    except DatabaseError as error:
        cause = error.__cause__
        code = getattr(cause, "pgcode", None) or getattr(cause, "sqlstate", None)
        if code not in (_UNDEFINED_FUNCTION, _UNDEFINED_TABLE):
            raise
        name = connections[using].settings_dict.get("NAME")
        diag = getattr(cause, "diag", None)
        what = getattr(diag, "message_primary", None) or str(cause).splitlines()[0]
        raise SchemaMissingError(
            f"the dispatcher's schema is missing in database {name!r} (alias {using!r}): {what}; "
            "run `dispatcher migrate` against it (or `python manage.py migrate outbox_events`, which applies "
            "the same migrations). Django's test database gets it from the outbox_events migrations, unless "
            "it is built without migrations (TEST: {'MIGRATE': False})"
        ) from error


def _check_destinations(cursor, lead_project_id: int, event_name: str, wanted: List[Pair]) -> None:
    """Raises DestinationConflictError when an existing row is for another destination than asked."""
    cursor.execute(_EXISTING_DESTINATIONS, [lead_project_id, event_name, [p for p, _ in wanted]])
    found = dict(cursor.fetchall())
    for provider, destination in wanted:
        existing = found.get(provider)
        if existing is not None and existing != destination:
            raise DestinationConflictError(
                f"lead {lead_project_id} already has a {provider!r} row for {event_name!r}, to destination "
                f"{existing!r}, so destination {destination!r} gets no row: an event_delivery row is unique per "
                "(lead, provider, event), whatever the destination. Send each event to one destination per "
                "provider, or give the events distinct names",
                provider=provider,
                existing_destination=existing,
                requested_destination=destination,
            )


def _serialise(payload: Mapping[str, Any]) -> str:
    if not isinstance(payload, Mapping):
        raise TypeError(f"payload must be a dict (the canonical event), not {type(payload).__name__}")
    # allow_nan=False: NaN and Infinity are not JSON, and PostgreSQL would refuse them.
    return json.dumps(payload, cls=DjangoJSONEncoder, allow_nan=False, ensure_ascii=False)


_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1


def _check_lead(lead_project_id: int) -> None:
    if isinstance(lead_project_id, bool) or not isinstance(lead_project_id, int):
        raise TypeError(f"lead_project_id must be an int, not {type(lead_project_id).__name__}")
    # Past bigint, PostgreSQL would look for an enqueue_event_delivery(numeric, ...)
    # and say it does not exist: a missing schema, which it is not.
    if not _BIGINT_MIN <= lead_project_id <= _BIGINT_MAX:
        raise ValueError(
            f"lead_project_id {lead_project_id} is out of range: event_delivery.lead_project_id is a bigint "
            f"({_BIGINT_MIN} to {_BIGINT_MAX})"
        )


def _check_event_name(event_name: str) -> None:
    if not isinstance(event_name, str) or not event_name.strip():
        raise ValueError("event_name must be a non-empty string")
