"""outbox_events' own tests; they run in the CRM's `manage.py test` like any app's.

They need PostgreSQL (the dispatcher's schema is PostgreSQL's) and, for the
admin tests, django.contrib.admin in INSTALLED_APPS.
"""

from unittest import skipUnless

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.test import TestCase, override_settings
from django.urls import reverse

from outbox_events import (
    DestinationConflictError,
    DuplicateProviderError,
    ReadOnlyError,
    SchemaMissingError,
    default_fanout,
    enqueue_event,
    enqueue_fanout,
    forget_lead,
)
from outbox_events.apps import check_outbox_settings
from outbox_events.models import EventDelivery
from outbox_events.schema import applied_migrations, apply_dispatcher_schema, dispatcher_migrations

PAYLOAD = {"email": "mary@example.com"}
SIGNATURE = "enqueue_event_delivery(bigint, text, text, jsonb, text, text)"


def publish_sealing_key() -> bytes:
    """Publishes a new current sealing key, as `dispatcher keys publish` does; returns its private half (PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from outbox_events import sealing

    private = X25519PrivateKey.generate()
    public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO outbox_sealing_key (key_id, public_key, is_current) VALUES (%s, %s, true)",
            [sealing.key_id(public), public],
        )
    return private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def registry_entry(provider, name):
    """(settings text, secrets text, enabled, updated_by) of a registry entry, or None."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT settings::text, secrets::text, enabled, updated_by FROM outbox_destination "
            "WHERE provider = %s AND name = %s",
            [provider, name],
        )
        return cursor.fetchone()


class Rollback(Exception):
    """Raised to leave an atomic block, undoing a change to the schema."""


class SchemaTests(TestCase):
    def test_the_test_database_has_every_dispatcher_migration_recorded(self):
        shipped = dispatcher_migrations()
        self.assertGreaterEqual(len(shipped), 5)
        self.assertEqual(applied_migrations(connection), [m.name for m in shipped])
        with connection.cursor() as cursor:
            cursor.execute("SELECT name, checksum FROM outbox_schema_migrations")
            self.assertEqual(dict(cursor.fetchall()), {m.name: m.checksum for m in shipped})

    def test_applying_again_changes_nothing(self):
        report = apply_dispatcher_schema(connection)
        self.assertEqual(report.applied, [])
        self.assertEqual(report.already_applied, [m.name for m in dispatcher_migrations()])

    def test_a_changed_migration_is_refused(self):
        with self.assertRaisesMessage(RuntimeError, "differs from"):
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(
                        "UPDATE outbox_schema_migrations SET checksum = 'edited' WHERE name = %s",
                        [dispatcher_migrations()[0].name],
                    )
                apply_dispatcher_schema(connection)

    def test_a_missing_schema_says_run_dispatcher_migrate(self):
        with self.assertRaises(SchemaMissingError) as caught:
            with transaction.atomic():  # a savepoint: the function comes back when it rolls back
                with connection.cursor() as cursor:
                    cursor.execute(f"DROP FUNCTION {SIGNATURE}")
                enqueue_event(1, "meta", "Lead", PAYLOAD)
        self.assertIn("run `dispatcher migrate`", str(caught.exception))
        self.assertIn("function enqueue_event_delivery(integer, unknown", str(caught.exception))
        self.assertIn(repr(connection.settings_dict["NAME"]), str(caught.exception))  # names the database
        self.assertTrue(enqueue_event(1, "meta", "Lead", PAYLOAD))  # the savepoint restored it


class ForgetLeadTests(TestCase):
    def payloads(self, lead):
        with connection.cursor() as cursor:
            cursor.execute("SELECT payload::text FROM event_delivery WHERE lead_project_id = %s", [lead])
            return [row[0] for row in cursor.fetchall()]

    def test_forget_lead_erases_closes_and_audits_inside_the_crm_transaction(self):
        enqueue_event(41, "meta", "Lead", {"event_time": 1767225600, "email": "mary@example.com", "value": 3})
        enqueue_event(42, "meta", "Lead", {"event_time": 1767225600, "email": "john@example.com"})
        # The CRM's deletion rolls back: nothing of it happened.
        with self.assertRaises(Rollback):
            with transaction.atomic():
                forget_lead(41, "dpo@crm")
                raise Rollback()
        self.assertIn("mary@example.com", self.payloads(41)[0])
        with transaction.atomic():
            report = forget_lead(41, "dpo@crm")
        self.assertEqual((report.rows_erased, report.rows_closed, report.rows_in_flight), (1, 1, 0))
        payload = self.payloads(41)[0]
        self.assertNotIn("mary@example.com", payload)
        self.assertIn('"email": "[erased]"', payload)
        self.assertIn('"value": 3', payload)
        self.assertIn("john@example.com", self.payloads(42)[0])
        row = EventDelivery.objects.get(lead_project_id=41)
        self.assertEqual((row.state, row.last_error), ("dead", "forgotten on request"))
        with connection.cursor() as cursor:
            cursor.execute("SELECT requested_by, rows_erased FROM outbox_erasure WHERE lead_project_id = 41")
            self.assertEqual(cursor.fetchall(), [("dpo@crm", 1)])

    def test_a_dry_run_changes_nothing(self):
        enqueue_event(43, "meta", "Lead", {"event_time": 1767225600, "email": "mary@example.com"})
        report = forget_lead(43, dry_run=True)
        self.assertEqual(report.rows_erased, 1)
        self.assertIn("mary@example.com", self.payloads(43)[0])


class ProviderErrorTests(TestCase):
    def test_providers_as_a_string_is_refused(self):
        with self.assertRaisesMessage(TypeError, "write providers=['webhook']"):
            enqueue_fanout(1, "Lead", PAYLOAD, providers="webhook")
        self.assertFalse(EventDelivery.objects.exists())

    def test_one_fanout_with_two_destinations_of_a_provider_is_refused(self):
        with self.assertRaisesMessage(DuplicateProviderError, "unique per (lead, provider, event)"):
            enqueue_fanout(1, "Lead", PAYLOAD, providers=[("webhook", "a"), "meta", ("webhook", "b")])
        self.assertFalse(EventDelivery.objects.exists())

    def test_a_second_destination_of_the_same_provider_raises(self):
        self.assertTrue(enqueue_event(1, "webhook", "Lead", PAYLOAD, destination="crm_hook"))
        self.assertFalse(enqueue_event(1, "webhook", "Lead", PAYLOAD, destination="crm_hook"))
        with self.assertRaises(DestinationConflictError) as caught:
            enqueue_event(1, "webhook", "Lead", PAYLOAD, destination="partner_hook")
        message = str(caught.exception)
        self.assertIn("'crm_hook'", message)
        self.assertIn("'partner_hook' gets no row", message)
        self.assertIn("unique per (lead, provider, event)", message)
        self.assertEqual(caught.exception.existing_destination, "crm_hook")

    def test_a_fanout_over_a_row_of_another_destination_raises(self):
        self.assertTrue(enqueue_event(1, "webhook", "Lead", PAYLOAD))  # destination "default"
        with self.assertRaisesMessage(DestinationConflictError, "destination 'crm_hook' gets no row"):
            enqueue_fanout(1, "Lead", PAYLOAD, providers=["meta", ("webhook", "crm_hook")])

    def test_a_lead_id_past_bigint_is_out_of_range_not_a_missing_schema(self):
        for lead in (2**63, -(2**63) - 1):
            with self.subTest(lead=lead):
                with self.assertRaisesRegex(ValueError, "out of range"):
                    enqueue_event(lead, "meta", "Lead", {})
                with self.assertRaisesRegex(ValueError, "out of range"):
                    enqueue_fanout(lead, "Lead", {})
        self.assertTrue(enqueue_event(2**63 - 1, "meta", "Lead", {}))  # the largest bigint is a lead id

    def test_bad_names_are_refused_before_the_database(self):
        with self.assertRaisesMessage(ValueError, "provider must be lower-case"):
            enqueue_event(1, "Meta", "Lead", PAYLOAD)
        with self.assertRaisesMessage(TypeError, "a fan-out entry"):
            enqueue_fanout(1, "Lead", PAYLOAD, providers=[("meta", "default", "extra")])

    def test_the_model_is_read_only(self):
        enqueue_event(1, "meta", "Lead", PAYLOAD)
        row = EventDelivery.objects.get()
        with self.assertRaises(ReadOnlyError):
            row.save()
        with self.assertRaises(ReadOnlyError):
            EventDelivery.objects.update(state="sent")


class DefaultFanoutSettingTests(TestCase):
    @override_settings(OUTBOX_EVENTS={"DEFAULT_FANOUT": [("webhook", "crm_hook"), "meta"]})
    def test_the_setting_names_the_default_fanout(self):
        self.assertEqual(enqueue_fanout(7, "Lead", PAYLOAD), {"webhook": True, "meta": True})
        rows = EventDelivery.objects.for_lead(7).order_by("provider")
        self.assertEqual([(r.provider, r.destination) for r in rows], [("meta", "default"), ("webhook", "crm_hook")])

    def test_without_the_setting_meta_tiktok_and_google_data_manager(self):
        with override_settings():
            from django.conf import settings

            del settings.OUTBOX_EVENTS
            self.assertEqual(
                default_fanout(),
                (("meta", "default"), ("tiktok", "default"), ("google_data_manager", "default")),
            )

    def test_a_wrong_setting_is_reported(self):
        cases = {
            "webhook": "not a string",
            (("meta", "a"), ("meta", "b")): "unique per (lead, provider, event)",
            (): "is empty",
        }
        for value, message in cases.items():
            with self.subTest(value=value), override_settings(OUTBOX_EVENTS={"DEFAULT_FANOUT": value}):
                with self.assertRaisesMessage(ImproperlyConfigured, message):
                    enqueue_fanout(1, "Lead", PAYLOAD)
                (error,) = check_outbox_settings()
                self.assertEqual(error.id, "outbox_events.E001")
                self.assertIn("DEFAULT_FANOUT", error.msg)
        with override_settings(OUTBOX_EVENTS={"DEFAULT_FANOUTS": []}):
            with self.assertRaisesMessage(ImproperlyConfigured, "unknown key(s) 'DEFAULT_FANOUTS'"):
                enqueue_fanout(1, "Lead", PAYLOAD)
        self.assertEqual(check_outbox_settings(), [])


@skipUnless(apps.is_installed("django.contrib.admin"), "django.contrib.admin is not installed")
class AdminTests(TestCase):
    def setUp(self):
        from django.contrib.auth import get_user_model

        staff = get_user_model().objects.create_superuser("oncall", "oncall@example.com", "not-a-secret")
        self.client.force_login(staff)
        enqueue_event(42, "meta", "Lead", {"email": "admin-view@example.com"})
        self.row = EventDelivery.objects.get(lead_project_id=42)
        with connection.cursor() as cursor:  # what the dispatcher writes after an attempt
            cursor.execute(
                "INSERT INTO event_delivery_attempt (delivery_id, attempt, started_at, duration_ms, outcome, "
                "http_status, error) VALUES (%s, 1, now(), 26, 'retry', 503, 'Meta: service unavailable')",
                [self.row.id],
            )

    def test_the_list_and_the_detail_page_show_the_row_and_its_attempts(self):
        listing = self.client.get(reverse("admin:outbox_events_eventdelivery_changelist"), {"q": "42"})
        self.assertEqual(listing.status_code, 200)
        self.assertContains(listing, "meta")
        self.assertNotContains(listing, reverse("admin:outbox_events_eventdelivery_add"))  # no "add" button
        detail = self.client.get(reverse("admin:outbox_events_eventdelivery_change", args=[self.row.id]))
        self.assertEqual(detail.status_code, 200)
        self.assertNotContains(detail, "admin-view@example.com")  # personal data hidden by default
        self.assertContains(detail, "&quot;email&quot;: &quot;[hidden]&quot;")
        self.assertContains(detail, "Meta: service unavailable")
        self.assertNotContains(detail, 'name="_save"')

    def test_a_superuser_sees_personal_data_when_asked_and_that_is_recorded(self):
        change = reverse("admin:outbox_events_eventdelivery_change", args=[self.row.id])
        shown = self.client.get(change, {"show_personal_data": "1"})
        self.assertContains(shown, "admin-view@example.com")
        with connection.cursor() as cursor:
            cursor.execute("SELECT accessed_by, what FROM outbox_personal_data_access")
            self.assertEqual(cursor.fetchall(), [("oncall (Django admin)", f"admin row {self.row.id}")])
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Permission

        staff = get_user_model().objects.create_user("viewer", "viewer@example.com", "not-a-secret", is_staff=True)
        staff.user_permissions.add(Permission.objects.get(codename="view_eventdelivery"))
        self.client.force_login(staff)
        masked = self.client.get(change, {"show_personal_data": "1"})
        self.assertEqual(masked.status_code, 200)
        self.assertNotContains(masked, "admin-view@example.com")  # staff, not superuser: still hidden

    def test_a_search_that_is_no_lead_id_is_never_a_server_error(self):
        changelist = reverse("admin:outbox_events_eventdelivery_changelist")
        for term in ["Lead", "9223372036854775808", "99999999999999999999999", "\u00b2", "42abc", " 42 "]:
            with self.subTest(term=term):
                self.assertEqual(self.client.get(changelist, {"q": term}).status_code, 200)
        self.assertContains(self.client.get(changelist, {"q": " 42 "}), "meta")

    def test_nothing_can_be_added_changed_or_deleted(self):
        add = self.client.get(reverse("admin:outbox_events_eventdelivery_add"))
        self.assertEqual(add.status_code, 403)
        change = reverse("admin:outbox_events_eventdelivery_change", args=[self.row.id])
        self.assertEqual(self.client.post(change, {"state": "sent"}).status_code, 403)
        delete = self.client.post(reverse("admin:outbox_events_eventdelivery_delete", args=[self.row.id]))
        self.assertEqual(delete.status_code, 403)
        self.assertEqual(EventDelivery.objects.get(id=self.row.id).state, EventDelivery.State.PENDING)


class SetDestinationTests(TestCase):
    """set_destination: the CRM creates a project's destination; secrets are sealed, never stored in clear."""

    def test_set_destination_seals_its_secret_and_keeps_what_a_change_does_not_name(self):
        import json

        from outbox_events import set_destination
        from outbox_events.sealing import open_sealed

        pem = publish_sealing_key()
        set_destination("meta", "project_17", {"pixel_id": "1234567890"}, secrets={"access_token": "EAAB-secret"},
                        actor="crm:project-setup")
        settings, secrets, enabled, by = registry_entry("meta", "project_17")
        self.assertEqual(json.loads(settings), {"pixel_id": "1234567890"})
        self.assertNotIn("EAAB-secret", secrets)
        sealed = json.loads(secrets)["access_token"]
        self.assertEqual(open_sealed(pem, sealed, "meta/project_17/access_token"), "EAAB-secret")
        self.assertTrue(enabled)
        self.assertEqual(by, "crm:project-setup")
        set_destination("meta", "project_17", {"concurrency": "4"}, enabled=False)
        settings, secrets, enabled, _ = registry_entry("meta", "project_17")
        self.assertEqual(json.loads(settings), {"pixel_id": "1234567890", "concurrency": "4"})
        self.assertEqual(json.loads(secrets)["access_token"], sealed)
        self.assertFalse(enabled)

    def test_set_destination_refuses_a_secret_in_clear_an_unknown_key_and_a_missing_key(self):
        from outbox_events import set_destination

        with self.assertRaisesMessage(ValueError, "'access_token' is a secret"):
            set_destination("meta", "project_18", {"access_token": "EAAB"})
        with self.assertRaisesMessage(ValueError, "unknown setting 'colour' for a webhook destination"):
            set_destination("webhook", "brand_a", {"colour": "blue"})
        with self.assertRaisesMessage(ValueError, "unknown provider 'myspace'"):
            set_destination("myspace", "default", {})
        with self.assertRaisesMessage(LookupError, "no sealing key is published"):
            set_destination("webhook", "brand_a", {"url": "https://h.example.com/"}, secrets={"secret": "whsec_x"})
        self.assertIsNone(registry_entry("webhook", "brand_a"))


class RegistryFanoutTests(TestCase):
    def test_registry_fanout_enqueues_for_the_projects_enabled_destinations_only(self):
        from outbox_events import registry_fanout, set_destination

        set_destination("meta", "project_17", {"pixel_id": "1234567890"})
        set_destination("webhook", "project_17", {"url": "https://hooks.example.com/17"})
        set_destination("tiktok", "project_17", {"event_source_id": "C4A"}, enabled=False)
        set_destination("meta", "project_18", {"pixel_id": "987"})
        self.assertEqual(registry_fanout("project_17"), [("meta", "project_17"), ("webhook", "project_17")])
        self.assertEqual(registry_fanout("project_99"), [])
        with self.assertRaisesMessage(ValueError, "destination must be lower-case"):
            registry_fanout("Project_17")
        results = enqueue_fanout(9, "Lead", PAYLOAD, providers=registry_fanout("project_17"))
        self.assertEqual(results, {"meta": True, "webhook": True})
        rows = EventDelivery.objects.order_by("provider").values_list("lead_project_id", "provider", "destination")
        self.assertEqual(list(rows), [(9, "meta", "project_17"), (9, "webhook", "project_17")])

    def test_the_destination_model_is_keyed_by_provider_and_name_and_read_only(self):
        from outbox_events import set_destination
        from outbox_events.models import OutboxDestination

        set_destination("meta", "project_17", {"pixel_id": "1"})
        set_destination("tiktok", "project_17", {"event_source_id": "C4A"}, enabled=False)
        entry = OutboxDestination.objects.get(pk="tiktok/project_17")
        self.assertEqual((entry.provider, entry.name, entry.enabled), ("tiktok", "project_17", False))
        self.assertEqual(entry.settings, {"event_source_id": "C4A"})
        self.assertEqual(list(OutboxDestination.objects.values_list("pk", flat=True)),
                         ["meta/project_17", "tiktok/project_17"])
        with self.assertRaises(ReadOnlyError):
            entry.save()
        with self.assertRaises(ReadOnlyError):
            OutboxDestination.objects.filter(provider="meta").delete()


@skipUnless(apps.is_installed("django.contrib.admin"), "django.contrib.admin is not installed")
class DestinationAdminTests(TestCase):
    """The registry's admin pages: secrets write-only, every write through set_destination."""

    TOKEN = "EAAB-plaintext-token-of-project-17"

    def setUp(self):
        from django.contrib.admin.utils import quote
        from django.contrib.auth import get_user_model

        from outbox_events import set_destination

        staff = get_user_model().objects.create_superuser("oncall", "oncall@example.com", "not-a-secret")
        self.client.force_login(staff)
        self.pem = publish_sealing_key()
        set_destination("meta", "project_17", {"pixel_id": "1234567890"}, secrets={"access_token": self.TOKEN})
        self.sealed = self.stored_secrets()["access_token"]
        self.url = {
            view: reverse(f"admin:outbox_events_outboxdestination_{view}", args=[quote("meta/project_17")])
            for view in ("change", "history", "delete")
        }

    def stored_secrets(self, provider="meta", name="project_17"):
        import json

        return json.loads(registry_entry(provider, name)[1])

    def post_change(self, **fields):
        return self.client.post(self.url["change"], {"enabled": "on", "settings_text": "pixel_id=1234567890", **fields})

    def assert_no_secret(self, text, *secrets):
        for secret in (self.TOKEN, self.sealed, self.sealed.rsplit(":", 1)[1][:24], "sealed:v1") + secrets:
            self.assertNotIn(secret, text)

    def form_errors(self, response):
        self.assertEqual(response.status_code, 200)  # the form again, nothing saved
        form = response.context["adminform"].form
        return " ".join(str(e) for errors in form.errors.values() for e in errors)

    def test_the_destination_pages_never_show_a_secret_plain_or_sealed(self):
        listing = self.client.get(reverse("admin:outbox_events_outboxdestination_changelist"), {"q": "project_17"})
        self.assertContains(listing, "access_token")  # which secrets are set: the names
        for page in [listing] + [self.client.get(url) for url in self.url.values()]:
            self.assertEqual(page.status_code, 200)
            self.assert_no_secret(page.content.decode())
        self.assertContains(self.client.get(self.url["change"]), "pixel_id=1234567890")
        # A form that comes back with an error does not echo the secret just typed.
        again = self.post_change(settings_text="colour=blue", secret_access_token="EAAB-typed-then-refused")
        self.assertIn("unknown setting 'colour'", self.form_errors(again))
        self.assert_no_secret(again.content.decode(), "EAAB-typed-then-refused")
        self.assertEqual(self.stored_secrets()["access_token"], self.sealed)

    def test_a_blank_secret_keeps_the_stored_one_and_a_new_one_is_sealed_for_the_key(self):
        from outbox_events.sealing import open_sealed

        self.assertEqual(self.post_change(settings_text="pixel_id=1234567890\nconcurrency=4").status_code, 302)
        self.assertEqual(self.stored_secrets()["access_token"], self.sealed)
        settings, _, enabled, by = registry_entry("meta", "project_17")
        self.assertEqual((settings, enabled, by), ('{"pixel_id": "1234567890", "concurrency": "4"}', True,
                                                   "django-admin:oncall"))
        self.assertEqual(self.post_change(secret_access_token="EAAB-rotated").status_code, 302)
        rotated = self.stored_secrets()["access_token"]
        self.assertNotEqual(rotated, self.sealed)
        self.assertEqual(open_sealed(self.pem, rotated, "meta/project_17/access_token"), "EAAB-rotated")
        self.assertEqual(registry_entry("meta", "project_17")[0], '{"pixel_id": "1234567890"}')  # concurrency left out
        self.assertEqual(self.post_change(remove_secrets=["access_token"]).status_code, 302)
        self.assertEqual(self.stored_secrets(), {})

    def test_the_history_names_secret_keys_never_their_values(self):
        from django.contrib.admin.models import LogEntry

        self.post_change(secret_access_token="EAAB-rotated", secret_app_secret="app-secret-17")
        rotated = self.stored_secrets()
        self.post_change(enabled="", remove_secrets=["app_secret"])
        entries = LogEntry.objects.filter(object_id="meta/project_17").order_by("id")
        messages = [e.get_change_message() for e in entries]
        self.assertEqual(messages, ["secret access_token changed; secret app_secret set",
                                    "disabled; secret app_secret removed"])
        for e in entries:
            self.assert_no_secret(e.change_message + e.object_repr, "EAAB-rotated", "app-secret-17", *rotated.values())
        history = self.client.get(self.url["history"])
        self.assertContains(history, "secret access_token changed")
        self.assert_no_secret(history.content.decode(), "EAAB-rotated", *rotated.values())

    def test_adding_a_destination_seals_its_secret_and_records_who(self):
        from django.contrib.admin.models import LogEntry

        from outbox_events.sealing import open_sealed

        add = reverse("admin:outbox_events_outboxdestination_add")
        form = {"provider": "tiktok", "name": "project_17", "enabled": "on", "settings_text": "event_source_id=C4A",
                "secret_access_token": "tt-token-17"}
        self.assertEqual(self.client.post(add, form).status_code, 302)
        settings, secrets, _, by = registry_entry("tiktok", "project_17")
        self.assertEqual((settings, by), ('{"event_source_id": "C4A"}', "django-admin:oncall"))
        sealed = self.stored_secrets("tiktok")["access_token"]
        self.assertEqual(open_sealed(self.pem, sealed, "tiktok/project_17/access_token"), "tt-token-17")
        logged = LogEntry.objects.get(object_id="tiktok/project_17")
        self.assertEqual(logged.get_change_message(), "added; setting event_source_id set; secret access_token set")
        self.assertIn("already exists", self.form_errors(self.client.post(add, form)))

    def test_an_invalid_setting_or_name_is_a_form_error(self):
        add = reverse("admin:outbox_events_outboxdestination_add")
        hook = {"provider": "webhook", "name": "brand_a", "settings_text": "url=https://hooks.example.com/a"}
        cases = [
            (add, {**hook, "name": "Brand-A"}, "destination must be lower-case"),
            (add, {**hook, "settings_text": "colour=blue"}, "unknown setting 'colour' for a webhook destination"),
            (add, {**hook, "secret_app_secret": "x"}, "unknown setting 'app_secret' for a webhook destination"),
            (add, {**hook, "settings_text": "url"}, "line 1 is not KEY=VALUE"),
            (self.url["change"], {"settings_text": "access_token=EAAB-in-clear"}, "a secret goes in the write-only"),
            (self.url["change"], {"other_secrets": "pixel_id=1"}, "pixel_id is not a secret"),
            (self.url["change"], {"settings_text": "colour=blue", "other_secrets": "header__x-api-key=EAAB-in-clear"},
             "unknown setting 'colour' for a meta destination"),
        ]
        for url, data, message in cases:
            with self.subTest(message=message):
                response = self.client.post(url, data)
                self.assertIn(message, self.form_errors(response))
                self.assertNotIn("EAAB-in-clear", response.content.decode())
        self.assertIsNone(registry_entry("webhook", "brand_a"))
        self.assertEqual(registry_entry("meta", "project_17")[0], '{"pixel_id": "1234567890"}')

    def test_delete_is_refused_while_a_row_is_pending(self):
        enqueue_event(5, "meta", "Lead", PAYLOAD, destination="project_17")
        for response in (self.client.get(self.url["delete"]), self.client.post(self.url["delete"], {"post": "yes"})):
            self.assertRedirects(response, self.url["change"], fetch_redirect_response=False)
        self.assertIsNotNone(registry_entry("meta", "project_17"))
        page = self.client.get(self.url["change"])
        self.assertContains(page, "was not removed: 1 row(s) are still pending or sending for it")
        with connection.cursor() as cursor:  # what the dispatcher writes once Meta accepted it
            cursor.execute("UPDATE event_delivery SET state = 'sent', sent_at = now() WHERE lead_project_id = 5")
        response = self.client.post(self.url["delete"], {"post": "yes"})
        self.assertRedirects(response, reverse("admin:outbox_events_outboxdestination_changelist"),
                             fetch_redirect_response=False)
        self.assertIsNone(registry_entry("meta", "project_17"))
