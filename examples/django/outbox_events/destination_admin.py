"""Admin pages for the dispatcher's destination registry (outbox_destination).

Every write goes through set_destination / remove_destination, as the CRM's
own code does: the same checks, the same sealing, the entry's advisory lock,
and updated_by = "django-admin:<username>". Secrets are write-only (see
destination_forms.py); the history (LogEntry) and the messages name a
secret's key, never its value, plain or sealed. Removing a destination is
refused while rows are pending or sending for it, as `dispatcher destination
remove` refuses without --force.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.db import router
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.views.decorators.debug import sensitive_post_parameters

from .destination_forms import DestinationForm, secret_fields_for, settings_lines
from .destinations import is_secret_key, remove_destination, set_destination, unfinished_rows
from .errors import DestinationInUseError
from .models import OutboxDestination

_CHANGES = ("Changes", {"fields": ("created_at", "updated_at", "updated_by")})


@admin.register(OutboxDestination)
class OutboxDestinationAdmin(admin.ModelAdmin):
    form = DestinationForm
    actions = None  # no "delete selected": each removal is checked on its own
    list_display = ("provider", "name", "enabled", "updated_at", "updated_by", "secret_names")
    list_filter = ("provider", "enabled")
    search_fields = ("provider", "name")
    ordering = ("provider", "name")

    def _using(self) -> str:
        return router.db_for_write(self.model)

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        # No renaming: (provider, name) is the entry's identity, and the rows' destination.
        return ("provider", "name", "secret_names", "settings_shown", "created_at", "updated_at", "updated_by")

    def get_fieldsets(self, request, obj=None):
        if obj is not None and not self.has_change_permission(request, obj):
            main = ("provider", "name", "enabled", "settings_shown", "secret_names")
            return [(None, {"fields": main}), _CHANGES]
        secrets = secret_fields_for(obj.provider if obj else "") + ["other_secrets"]
        if obj is not None:
            secrets = ["secret_names"] + secrets + ["remove_secrets"]
        fieldsets = [
            (None, {"fields": ("provider", "name", "enabled", "settings_text")}),
            ("Secrets (write-only)", {
                "fields": secrets,
                "description": "Sealed for the dispatcher's key before they are stored; never shown, here or "
                "anywhere. Leave a field blank to keep the stored secret.",
            }),
        ]
        return fieldsets + ([_CHANGES] if obj is not None else [])

    @method_decorator(sensitive_post_parameters())  # error reports never carry the typed secrets
    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        return super().changeform_view(request, object_id, form_url, extra_context)

    def save_model(self, request, obj, form, change):
        set_destination(
            obj.provider,
            obj.name,
            settings=form.settings_change,
            secrets=form.secrets_change,
            enabled=obj.enabled,
            actor=f"django-admin:{request.user.get_username()}",
            using=self._using(),
        )
        obj.key = str(obj)  # the pk, for the "added" message and LogEntry.object_id

    def construct_change_message(self, request, form, formsets, add=False):
        return form.change_summary(add)  # key names only, never a value

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        if obj is None or not self.has_delete_permission(request, obj):
            return super().delete_view(request, object_id, extra_context)
        rows = unfinished_rows(obj.provider, obj.name, self._using())
        if rows:
            return self._refuse_delete(request, obj, rows)
        try:
            return super().delete_view(request, object_id, extra_context)
        except DestinationInUseError as error:  # a row enqueued since the check above
            return self._refuse_delete(request, obj, error.rows)

    def _refuse_delete(self, request, obj, rows: int):
        self.message_user(
            request,
            f"{obj} was not removed: {rows} row(s) are still pending or sending for it. Disable it instead "
            "(its rows wait), or remove it once they are sent.",
            messages.ERROR,
        )
        change = reverse("admin:outbox_events_outboxdestination_change", args=[quote(obj.pk)],
                         current_app=self.admin_site.name)
        return HttpResponseRedirect(change)

    def delete_model(self, request, obj):
        remove_destination(obj.provider, obj.name, using=self._using())

    @admin.display(description="secrets set")
    def secret_names(self, obj: OutboxDestination) -> str:
        # A secret written by hand into the plain settings is named too (its value is never shown).
        clear = [f"{k} (not sealed: set it again)" for k in sorted(obj.settings) if is_secret_key(k)]
        return ", ".join(obj.secret_keys + clear) or "-"

    @admin.display(description="settings")
    def settings_shown(self, obj: OutboxDestination) -> str:
        return format_html("<pre>{}</pre>", settings_lines(obj.settings))
