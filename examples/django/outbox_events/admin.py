"""Read-only admin pages for the outbox: what was sent where, and each attempt.

Rows belong to the dispatcher once inserted, so nothing here adds, changes or
deletes (the models refuse it too); on-call acts with `dispatcher requeue`,
`pause` and friends. Staff need the "view" permission of the models. The
detail page shows the payload: the CRM's own lead data, as the lead page does.
The destination registry's pages, which do write, are in destination_admin.py.
"""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html

from . import destination_admin  # noqa: F401  (registers OutboxDestination's pages)
from .models import EventDelivery, EventDeliveryAttempt


class ReadOnlyMixin:
    actions = None  # no "delete selected"

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class AttemptInline(ReadOnlyMixin, admin.TabularInline):
    model = EventDeliveryAttempt
    fields = ("attempt", "started_at", "outcome", "http_status", "duration_ms", "error", "response_excerpt", "note")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False


@admin.register(EventDelivery)
class EventDeliveryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "lead_project_id",
        "provider",
        "destination",
        "event_name",
        "state",
        "attempts",
        "next_attempt_at",
        "sent_at",
        "last_http_status",
        "short_error",
    )
    list_filter = ("state", "provider", "destination", "event_name")
    # A number searches the lead id; any text the exact idempotency key or the event name.
    search_fields = ("=idempotency_key", "event_name")
    ordering = ("-id",)
    # The table grows by one row per event: no count(*) of all of it on every page.
    show_full_result_count = False
    readonly_fields = (
        "id",
        "lead_project_id",
        "provider",
        "destination",
        "event_name",
        "idempotency_key",
        "state",
        "attempts",
        "created_at",
        "next_attempt_at",
        "sent_at",
        "updated_at",
        "last_http_status",
        "last_error",
        "provider_response",
        "lease_owner",
        "lease_expires_at",
        "payload_json",
    )
    fields = readonly_fields
    inlines = (AttemptInline,)

    def get_search_results(self, request, queryset, search_term):
        # A lead id is searched as one; anything else (letters, "²", a number past
        # bigint) by key and event name, never a database error (a 500).
        term = search_term.strip()
        if term.isascii() and term.isdigit() and int(term) <= 2**63 - 1:
            return queryset.filter(lead_project_id=int(term)), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="last error")
    def short_error(self, obj: EventDelivery) -> str:
        text = obj.last_error or ""
        return text if len(text) <= 80 else text[:79] + "…"

    @admin.display(description="payload")
    def payload_json(self, obj: EventDelivery) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.payload, indent=2, sort_keys=True, ensure_ascii=False))
