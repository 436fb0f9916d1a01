"""The CRM's own tests of code that enqueues, as a CRM developer writes them.

Plain django.test.TestCase: each test runs in a transaction that is rolled back
afterwards, and the outbox rows are part of it, so they vanish with the test's
leads. The test database has the dispatcher's schema because outbox_events'
migration 0002 applies it when Django builds the database from migrations.
"""

from decimal import Decimal

from django.db import connection, transaction
from django.test import TestCase

from outbox_events.models import EventDelivery

from .models import Lead
from .services import qualify_lead, record_purchase

DEFAULT_PROVIDERS = ["google_data_manager", "meta", "tiktok"]


def idempotency_key(lead_id: int, provider: str, event: str) -> str:
    """The dispatcher's key for the triple, computed by its SQL function."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT outbox_idempotency_key(%s, %s, %s)", [lead_id, provider, event])
        return cursor.fetchone()[0]


class QualifyLeadTests(TestCase):
    def setUp(self):
        self.lead = Lead.objects.create(email="Mary@Example.com", phone="+1 650 555 0100")

    def test_qualifying_a_lead_enqueues_one_row_per_default_provider(self):
        self.assertEqual(qualify_lead(self.lead), {p: True for p in DEFAULT_PROVIDERS})

        rows = EventDelivery.objects.for_lead(self.lead.id).order_by("provider")
        self.assertEqual([r.provider for r in rows], DEFAULT_PROVIDERS)
        for row in rows:
            self.assertEqual(row.event_name, "Lead")
            self.assertEqual(row.destination, "default")
            self.assertEqual(row.state, EventDelivery.State.PENDING)
            self.assertEqual(row.attempts, 0)
            self.assertEqual(row.payload["email"], "Mary@Example.com")
            self.assertEqual(row.idempotency_key, idempotency_key(self.lead.id, row.provider, "Lead"))
        self.assertEqual(Lead.objects.get(id=self.lead.id).stage, Lead.Stage.QUALIFIED)

    def test_qualifying_twice_enqueues_nothing_new_and_keeps_the_first_payload(self):
        qualify_lead(self.lead)
        self.lead.email = "changed@example.com"
        self.assertEqual(qualify_lead(self.lead), {p: False for p in DEFAULT_PROVIDERS})

        rows = EventDelivery.objects.for_lead(self.lead.id)
        self.assertEqual(rows.count(), 3)
        self.assertEqual({r.payload["email"] for r in rows}, {"Mary@Example.com"})

    def test_a_rolled_back_transaction_leaves_no_row(self):
        class Failed(Exception):
            pass

        with self.assertRaises(Failed):
            with transaction.atomic():
                self.assertEqual(qualify_lead(self.lead), {p: True for p in DEFAULT_PROVIDERS})
                raise Failed()

        self.assertFalse(EventDelivery.objects.for_lead(self.lead.id).exists())
        self.assertEqual(Lead.objects.get(id=self.lead.id).stage, Lead.Stage.NEW)

    def test_no_on_commit_callback_is_needed(self):
        with self.captureOnCommitCallbacks() as callbacks:
            qualify_lead(self.lead)
        self.assertEqual(callbacks, [])
        self.assertEqual(EventDelivery.objects.for_lead(self.lead.id).count(), 3)


class PurchaseTests(TestCase):
    def setUp(self):
        self.lead = Lead.objects.create(email="buyer@example.com")

    def test_a_purchase_goes_to_the_crm_hook_once(self):
        self.assertTrue(record_purchase(self.lead, "order-1", Decimal("120.50")))
        self.assertFalse(record_purchase(self.lead, "order-1-retried", Decimal("1")))

        row = EventDelivery.objects.get(lead_project_id=self.lead.id, provider="webhook", event_name="Purchase")
        self.assertEqual(row.destination, "crm_hook")
        self.assertEqual(row.payload["value"], "120.50")  # DjangoJSONEncoder: a Decimal as a decimal string
        self.assertEqual(row.payload["order_id"], "order-1")


# Two tests enqueue the same (lead, provider, event): each sees True only
# because the other's row was rolled back with its test.
FIXED_LEAD = 424242


class IsolationTests(TestCase):
    def enqueue_fixed(self) -> bool:
        from outbox_events import enqueue_event

        return enqueue_event(FIXED_LEAD, "meta", "Lead", {"email": "isolated@example.com"})

    def test_first_test_starts_without_the_row(self):
        self.assertTrue(self.enqueue_fixed())

    def test_second_test_starts_without_the_row(self):
        self.assertTrue(self.enqueue_fixed())
