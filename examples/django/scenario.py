#!/usr/bin/env python3
"""Enqueue outbox events from Django the way the CRM does, and print what each
call returned as JSON on stdout. Driven by tests/e2e/django_e2e.cpp with a
dispatcher running; also runnable by hand against a migrated database:

    PGHOST=... PGDATABASE=crm python3 examples/django/scenario.py --providers meta,tiktok,webhook

Steps, each in its own transaction.atomic() block:
  1. lead 1: one fan-out of "Lead" to every provider of --providers, committed;
  2. lead 2: "Purchase" to webhook and meta with enqueue_event (plus a repeat of
     the webhook one in the same transaction, which returns False), committed;
  3. lead 666: a fan-out, then an exception: rolled back, so no row exists;
  4. lead 1 again: the same event and fan-out once more, committed: every call
     returns False and the stored payload stays the first one;
  5. with --default-fanout, lead 3 (from a Google ad click, email and phone
     only): a fan-out that names no providers, so the default fan-out
     (settings.OUTBOX_EVENTS["DEFAULT_FANOUT"]: meta, tiktok and
     google_data_manager) is used, committed. The dispatcher
     needs those three destinations configured.
"""

import sys

sys.dont_write_bytecode = True  # keep the source tree clean

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402
from decimal import Decimal  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")

try:
    import django
    import psycopg2  # noqa: F401  (Django's PostgreSQL driver; imported here for a clear error)
except ImportError as error:
    sys.exit(
        f"scenario.py: {error} for {sys.executable}: install Debian's python3-django and python3-psycopg2 "
        "(scripts/setup.sh does)"
    )

django.setup()

from django.db import transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from outbox_events import default_fanout, enqueue_event, enqueue_fanout  # noqa: E402
from outbox_events.models import EventDelivery, ReadOnlyError  # noqa: E402


class RolledBack(Exception):
    pass


def lead_payload(lead, **overrides):
    """A canonical event (docs/providers.md) as the CRM would build it."""
    payload = {
        "event_time": timezone.now(),  # DjangoJSONEncoder: "2026-01-01T10:00:00.123Z"
        "action_source": "system_generated",
        "email": f"Lead{lead}@Example.com",
        "phone": f"+1 650 555 {1000 + lead}",
        "first_name": "Mary",
        "last_name": "Smith",
        "country": "US",
        "external_id": f"crm-user-{lead}",
        "lead_id": 7000000000000 + lead,
        "order_id": f"crm-lead-{lead}",
    }
    payload.update(overrides)
    return payload


def parse_providers(text):
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        provider, _, destination = item.partition(":")
        pairs.append((provider, destination or "default"))
    return pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--providers",
        default="meta,tiktok,webhook",
        help="the fan-out: comma-separated provider[:destination] (default %(default)s)",
    )
    parser.add_argument(
        "--default-fanout",
        action="store_true",
        help="also enqueue lead 3 with enqueue_fanout's default providers (step 5)",
    )
    args = parser.parse_args()
    providers = parse_providers(args.providers)
    summary = {"django": django.get_version(), "providers": [list(p) for p in providers]}

    # 1. A new lead: the lead's own writes and its events commit together.
    with transaction.atomic():
        summary["lead_1_fanout"] = enqueue_fanout(1, "Lead", lead_payload(1), providers=providers)

    # 2. Another lead, one provider at a time; Decimal values go out as strings ("120.50").
    purchase = lead_payload(2, value=Decimal("120.50"), currency="EUR", order_id="crm-order-2")
    with transaction.atomic():
        summary["lead_2"] = {
            "webhook": enqueue_event(2, "webhook", "Purchase", purchase),
            "meta": enqueue_event(2, "meta", "Purchase", purchase, destination="default"),
            "webhook_repeated_in_transaction": enqueue_event(2, "webhook", "Purchase", dict(purchase, value=1)),
        }

    # 3. The CRM's transaction fails after enqueueing: nothing may ever be sent.
    try:
        with transaction.atomic():
            summary["lead_666_fanout_before_rollback"] = enqueue_fanout(
                666, "Lead", lead_payload(666), providers=providers
            )
            raise RolledBack()
    except RolledBack:
        pass
    summary["lead_666_rows_after_rollback"] = EventDelivery.objects.for_lead(666).count()

    # 4. The same events again (a retried request, a double click): no new row, no overwrite.
    with transaction.atomic():
        summary["duplicate_event"] = enqueue_event(
            1, "webhook", "Lead", lead_payload(1, order_id="crm-lead-1-duplicate")
        )
        summary["duplicate_fanout"] = enqueue_fanout(
            1, "Lead", lead_payload(1, order_id="crm-lead-1-duplicate"), providers=providers
        )
    # 5. A lead from a Google ad click (a short form: email and phone only),
    #    fanned out to the default providers.
    summary["default_fanout_providers"] = [list(p) for p in default_fanout()]
    if args.default_fanout:
        google_lead = lead_payload(3, gclid="Cj0KCQiA-django-3")
        for field in ("first_name", "last_name"):
            del google_lead[field]
        with transaction.atomic():
            summary["lead_3_default_fanout"] = enqueue_fanout(3, "Lead", google_lead)

    first = EventDelivery.objects.get(lead_project_id=1, provider="webhook", event_name="Lead")
    summary["lead_1_webhook_order_id"] = first.payload.get("order_id")

    try:
        first.save()
        summary["model_read_only"] = False
    except ReadOnlyError:
        summary["model_read_only"] = True

    summary["rows"] = [
        {
            "id": row.id,
            "lead_project_id": row.lead_project_id,
            "provider": row.provider,
            "destination": row.destination,
            "event_name": row.event_name,
            "idempotency_key": row.idempotency_key,
        }
        for row in EventDelivery.objects.order_by("id")
    ]
    json.dump(summary, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
