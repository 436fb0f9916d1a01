"""Read access to the dispatcher's outbox table.

The dispatcher owns the schema (sql/0001_event_delivery.sql, applied by
`dispatcher migrate`), so the model is unmanaged: Django never creates, alters
or drops the table. Rows are written by `enqueue_event` / `enqueue_fanout`
(the SQL function computes the idempotency key) and then belong to the
dispatcher, which claims them under a lease and settles them. The model is
therefore read-only: saving or deleting through the ORM raises, so CRM code
cannot race the dispatcher's lease-fenced updates. On-call changes go through
`dispatcher requeue` / `dispatcher prune`.
"""

from django.db import models


class ReadOnlyError(TypeError):
    pass


_READ_ONLY = (
    "event_delivery rows are written by outbox_events.enqueue_event(...) and then owned by the "
    "dispatcher; use `dispatcher requeue` or `dispatcher prune` to change them"
)


class EventDeliveryQuerySet(models.QuerySet):
    def for_lead(self, lead_project_id):
        return self.filter(lead_project_id=lead_project_id)

    def undelivered(self):
        """Rows not delivered yet, failed ones included."""
        return self.exclude(state=EventDelivery.State.SENT)

    def failed(self):
        """Rows that need on-call: dead (gave up) or held (Meta, expired lease)."""
        return self.filter(state__in=[EventDelivery.State.DEAD, EventDelivery.State.HELD])

    def update(self, **kwargs):
        raise ReadOnlyError(_READ_ONLY)

    def delete(self):
        raise ReadOnlyError(_READ_ONLY)

    def bulk_create(self, *args, **kwargs):
        raise ReadOnlyError(_READ_ONLY)

    def bulk_update(self, *args, **kwargs):
        raise ReadOnlyError(_READ_ONLY)


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

    def __str__(self):
        return f"#{self.id} lead {self.lead_project_id} {self.provider}/{self.destination} {self.event_name}: {self.state}"

    @property
    def delivered(self):
        return self.state == self.State.SENT

    def save(self, *args, **kwargs):
        raise ReadOnlyError(_READ_ONLY)

    def delete(self, *args, **kwargs):
        raise ReadOnlyError(_READ_ONLY)
