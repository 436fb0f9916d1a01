"""Read access to the dispatcher's outbox table and its attempts log.

The dispatcher owns the schema (sql/NNNN_*.sql, applied by `dispatcher migrate`
or by this app's migration 0002, which runs the same files), so the models are
unmanaged: Django's model operations never create, alter or drop the tables. Rows are written by `enqueue_event` / `enqueue_fanout`
(the SQL function computes the idempotency key) and then belong to the
dispatcher, which claims them under a lease and settles them. The models are
therefore read-only: saving or deleting through the ORM raises, so CRM code
cannot race the dispatcher's lease-fenced updates. On-call changes go through
`dispatcher requeue` / `dispatcher prune`.
"""

from __future__ import annotations

from django.db import models
from django.db.models.expressions import Col
from django.utils.functional import cached_property

from .errors import ReadOnlyError

__all__ = ["EventDelivery", "EventDeliveryAttempt", "OutboxDestination", "ReadOnlyError"]

_READ_ONLY = (
    "event_delivery rows are written by outbox_events.enqueue_event(...) and then owned by the "
    "dispatcher; use `dispatcher requeue` or `dispatcher prune` to change them"
)


class ReadOnlyQuerySet(models.QuerySet):
    """Reads only: every write through the ORM raises ReadOnlyError (the model's READ_ONLY says what to use)."""

    def _refuse(self):
        raise ReadOnlyError(getattr(self.model, "READ_ONLY", _READ_ONLY))

    def update(self, **kwargs):
        self._refuse()

    def delete(self):
        self._refuse()

    def bulk_create(self, *args, **kwargs):
        self._refuse()

    def bulk_update(self, *args, **kwargs):
        self._refuse()


class EventDeliveryQuerySet(ReadOnlyQuerySet):
    def for_lead(self, lead_project_id: int) -> EventDeliveryQuerySet:
        return self.filter(lead_project_id=lead_project_id)

    def undelivered(self) -> EventDeliveryQuerySet:
        """Rows not delivered yet, failed ones included."""
        return self.exclude(state=EventDelivery.State.SENT)

    def failed(self) -> EventDeliveryQuerySet:
        """Rows that need on-call: dead (gave up) or held (Meta, expired lease)."""
        return self.filter(state__in=[EventDelivery.State.DEAD, EventDelivery.State.HELD])


class EventDelivery(models.Model):
    """One row per (lead, provider, event): what the dispatcher sends, and how it went."""

    class State(models.TextChoices):
        PENDING = "pending", "pending"  # waiting to be sent (first time, or a retry at next_attempt_at)
        SENDING = "sending", "sending"  # claimed by a dispatcher under a lease
        SENT = "sent", "sent"  # the provider accepted it (2xx)
        DEAD = "dead", "dead"  # permanent error or out of attempts; see last_error
        HELD = "held", "held"  # held for review after an expired lease (Meta with ON_EXPIRED_LEASE=hold)

    # Written once by enqueue_event_delivery(...).
    id = models.BigAutoField(primary_key=True)  # GENERATED ALWAYS AS IDENTITY
    lead_project_id = models.BigIntegerField(editable=False)
    provider = models.TextField(editable=False)
    destination = models.TextField(default="default", editable=False)
    event_name = models.TextField(editable=False)
    # Computed by the SQL function from the unique triple; the provider's dedup id on every attempt.
    idempotency_key = models.TextField(editable=False)
    payload = models.JSONField(editable=False)  # the canonical event, frozen at insert
    created_at = models.DateTimeField(editable=False)

    # Owned by the dispatcher.
    state = models.TextField(choices=State.choices, default=State.PENDING, editable=False)
    attempts = models.IntegerField(default=0, editable=False)
    next_attempt_at = models.DateTimeField(editable=False)
    lease_owner = models.TextField(null=True, editable=False)
    lease_token = models.UUIDField(null=True, editable=False)
    lease_expires_at = models.DateTimeField(null=True, editable=False)
    sent_at = models.DateTimeField(null=True, editable=False)
    last_error = models.TextField(null=True, editable=False)
    last_http_status = models.IntegerField(null=True, editable=False)
    provider_response = models.TextField(null=True, editable=False)
    updated_at = models.DateTimeField(editable=False)
    # Set when its personal data was erased (the dispatcher's docs/personal_data.md):
    # "retention" or "forgotten on request".
    personal_data_erased_at = models.DateTimeField(null=True, editable=False)
    personal_data_erased_why = models.TextField(null=True, editable=False)

    objects = EventDeliveryQuerySet.as_manager()

    class Meta:
        managed = False
        db_table = "event_delivery"
        ordering = ["id"]
        verbose_name = "event delivery"
        verbose_name_plural = "event deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["lead_project_id", "provider", "event_name"], name="event_delivery_one_per_event"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.id} lead {self.lead_project_id} {self.provider}/{self.destination} {self.event_name}: {self.state}"

    @property
    def delivered(self) -> bool:
        return self.state == self.State.SENT

    def save(self, *args, **kwargs):
        raise ReadOnlyError(_READ_ONLY)

    def delete(self, *args, **kwargs):
        raise ReadOnlyError(_READ_ONLY)


class EventDeliveryAttempt(models.Model):
    """One line of a row's attempts log (event_delivery_attempt), written by the dispatcher only."""

    id = models.BigAutoField(primary_key=True)
    # No foreign key in the database: `dispatcher prune` archives rows, and the log is kept or pruned on its own.
    delivery = models.ForeignKey(
        EventDelivery,
        on_delete=models.DO_NOTHING,
        db_column="delivery_id",
        db_constraint=False,
        related_name="attempt_log",
        editable=False,
    )
    attempt = models.IntegerField(editable=False)
    started_at = models.DateTimeField(editable=False)
    duration_ms = models.IntegerField(editable=False)
    outcome = models.TextField(editable=False)  # delivered, retry, rejected, ... (docs/operations.md)
    http_status = models.IntegerField(null=True, editable=False)
    error = models.TextField(null=True, editable=False)
    response_excerpt = models.TextField(null=True, editable=False)  # the provider's answer, first 512 bytes
    lease_owner = models.TextField(null=True, editable=False)
    note = models.TextField(null=True, editable=False)
    provider_request_id = models.TextField(null=True, editable=False)  # Google Data Manager: checked later

    objects = ReadOnlyQuerySet.as_manager()

    class Meta:
        managed = False
        db_table = "event_delivery_attempt"
        ordering = ["id"]
        verbose_name = "delivery attempt"
        verbose_name_plural = "delivery attempts"

    def __str__(self) -> str:
        return f"attempt {self.attempt} of #{self.delivery_id}: {self.outcome}"

    def save(self, *args, **kwargs):
        raise ReadOnlyError(_READ_ONLY)

    def delete(self, *args, **kwargs):
        raise ReadOnlyError(_READ_ONLY)


class _RegistryKeyCol(Col):
    """The SQL of RegistryKeyField: provider || '/' || name of the row."""

    def as_sql(self, compiler, connection):
        quote = compiler.quote_name_unless_alias
        table = f"{quote(self.alias)}." if self.alias else ""
        return f"({table}{quote('provider')} || '/' || {table}{quote('name')})", []


class RegistryKeyField(models.TextField):
    """outbox_destination's primary key is (provider, name), and Django before 5.2
    has no composite key: this field is "provider/name", read from both columns,
    so pk lookups, admin URLs and LogEntry.object_id name one entry. It is no
    column: rows are written by set_destination, never by the ORM."""

    def get_col(self, alias, output_field=None):
        return _RegistryKeyCol(alias, self, output_field or self)

    @cached_property
    def cached_col(self):
        return _RegistryKeyCol(self.model._meta.db_table, self)


class OutboxDestination(models.Model):
    """A destination of the dispatcher's registry (sql/0010_destination_registry.sql).

    Read here, written by set_destination / remove_destination (validation,
    sealing and the entry's lock), as the admin does; `secrets` holds sealed
    values only, and nothing here can open them.
    """

    READ_ONLY = (
        "outbox_destination entries are written by outbox_events.set_destination(...) and removed by "
        "remove_destination(...), which check, seal and lock as `dispatcher destination set` does"
    )

    key = RegistryKeyField(primary_key=True, editable=False)  # "provider/name"
    provider = models.TextField()
    name = models.TextField()
    settings = models.JSONField(default=dict, editable=False)  # {"pixel_id": "123"}: plain strings
    secrets = models.JSONField(default=dict, editable=False)  # {"access_token": "sealed:v1:..."}
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(editable=False)
    updated_at = models.DateTimeField(editable=False)
    updated_by = models.TextField(editable=False)

    objects = ReadOnlyQuerySet.as_manager()

    class Meta:
        managed = False
        db_table = "outbox_destination"
        ordering = ["provider", "name"]
        unique_together = [("provider", "name")]  # the table's primary key
        verbose_name = "destination"
        verbose_name_plural = "destinations"

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"

    @property
    def secret_keys(self):
        """The names of the secrets set, sorted; never their values."""
        return sorted(self.secrets or {})

    def save(self, *args, **kwargs):
        raise ReadOnlyError(self.READ_ONLY)

    def delete(self, *args, **kwargs):
        raise ReadOnlyError(self.READ_ONLY)
