"""Read-only admin pages for the outbox: what was sent where, and each attempt.

Rows belong to the dispatcher once inserted, so nothing here adds, changes or
deletes (the models refuse it too); on-call acts with `dispatcher requeue`,
`pause` and friends. Staff need the "view" permission of the models. The
detail page shows the payload with its personal data (email, phone, names,
ids: the dispatcher's outbox_personal_fields()) as "[hidden]"; a superuser
sees it whole with ?show_personal_data=1, and that is recorded in
outbox_personal_data_access.
The destination registry's pages, which do write, are in destination_admin.py.
"""

from __future__ import annotations

import json

from django.contrib import admin
from django.db import connection
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
        "personal_data_erased_at",
        "personal_data_erased_why",
        "payload_json",
    )
    fields = readonly_fields
    inlines = (AttemptInline,)

    @staticmethod
    def _shows_personal_data(request) -> bool:
        return request.user.is_superuser and request.GET.get("show_personal_data") == "1"

    def get_fields(self, request, obj=None):
        shown = self._shows_personal_data(request)
        return [("payload_shown" if shown and f == "payload_json" else f) for f in self.readonly_fields]

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if self._shows_personal_data(request):
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO outbox_personal_data_access (accessed_by, what) VALUES (%s, %s)",
                    [f"{request.user.get_username()} (Django admin)", f"admin row {object_id}"],
                )
        return super().change_view(request, object_id, form_url, extra_context)

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

    @admin.display(description="payload (personal data hidden)")
    def payload_json(self, obj: EventDelivery) -> str:
        return _pre(_hidden(obj.payload, set(_personal_fields())))

    @admin.display(description="payload")
    def payload_shown(self, obj: EventDelivery) -> str:
        return _pre(obj.payload)


def _pre(payload) -> str:
    return format_html("<pre>{}</pre>", json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False))


_PERSONAL_FIELDS = None


def _personal_fields():
    """The dispatcher's list (outbox_personal_fields()), read once."""
    global _PERSONAL_FIELDS
    if _PERSONAL_FIELDS is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT unnest(outbox_personal_fields())")
            _PERSONAL_FIELDS = [row[0] for row in cursor.fetchall()]
    return _PERSONAL_FIELDS


def _hidden(value, personal):
    """`value` with every personal key's value, at any depth, shown as "[hidden]"."""
    if isinstance(value, dict):
        return {k: ("[hidden]" if k in personal else _hidden(v, personal)) for k, v in value.items()}
    if isinstance(value, list):
        return [_hidden(v, personal) for v in value]
    return value
