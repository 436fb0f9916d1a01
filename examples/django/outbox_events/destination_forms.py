"""The admin's form for a registry destination: plain settings as KEY=VALUE
lines, secrets write-only.

A secret is never rendered into the page: not the stored sealed value, not the
plaintext typed into a form that comes back with an error. A blank secret
field keeps the stored secret; "remove secrets" removes one. The form only
works out the change and checks it as set_destination would (same function),
so a mistake is a form error; the admin then saves it with set_destination.
"""

from __future__ import annotations

from typing import Dict, Iterable

from django import forms
from django.core.exceptions import ValidationError
from django.db import router

from .conf import check_name
from .destinations import (
    PROVIDER_KEYS,
    SECRET_KEYS,
    check_destination,
    is_secret_key,
    registry_key,
    sealing_key_published,
)
from .models import OutboxDestination

# One write-only field per secret key the providers take; headers go in "other secrets".
SECRET_FIELDS = {key: f"secret_{key}" for key in sorted(SECRET_KEYS)}


def secret_fields_for(provider: str) -> list:
    """The secret fields a provider takes (all of them while adding, before one is chosen)."""
    keys = PROVIDER_KEYS.get(provider, SECRET_KEYS) & SECRET_KEYS
    return [SECRET_FIELDS[key] for key in sorted(keys)]


def parse_lines(text: str) -> Dict[str, str]:
    """KEY=VALUE lines ('#' comments and blank lines skipped) to {registry key: value}.
    An error names the line's number, never its text: it may hold a secret."""
    values: Dict[str, str] = {}
    for number, line in enumerate((text or "").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, equals, value = line.partition("=")
        if not equals or not key.strip():
            raise ValidationError(f"line {number} is not KEY=VALUE")
        key = registry_key(key.strip())
        if key in values:
            raise ValidationError(f"{key} is given twice")
        values[key] = value.strip()
    return values


def settings_lines(settings: dict) -> str:
    """The plain settings as KEY=VALUE lines, without a secret stored in clear by hand."""
    return "\n".join(f"{k}={v}" for k, v in sorted(settings.items()) if not is_secret_key(k))


class SettingsTextarea(forms.Textarea):
    """Renders the lines back without any whose key is a secret's (typed into the wrong field)."""

    def format_value(self, value):
        text = super().format_value(value) or ""
        kept = [line for line in text.splitlines() if not is_secret_key(registry_key(line.partition("=")[0].strip()))]
        return "\n".join(kept)


class WriteOnlyTextarea(forms.Textarea):
    def format_value(self, value):
        return None  # never rendered back, even after a form error


def _secret_field(key: str) -> forms.CharField:
    # render_value=False: empty after an error too; new-password: no browser fills in the admin's own password.
    widget = forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})
    return forms.CharField(label=key, required=False, widget=widget, help_text="blank keeps the stored secret")


class DestinationForm(forms.ModelForm):
    provider = forms.ChoiceField(choices=[(p, p) for p in sorted(PROVIDER_KEYS)])
    name = forms.CharField(
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
        help_text="lower-case letters, digits and '_', e.g. project_17 (what enqueue_fanout and registry_fanout name)",
    )
    settings_text = forms.CharField(
        label="settings",
        required=False,
        widget=SettingsTextarea(attrs={"rows": 8, "cols": 80}),
        help_text="KEY=VALUE, one a line (pixel_id=1234567890, concurrency=4, header__x-tenant=acme); a key "
        "left out is removed. Secrets go in the fields below, never here.",
    )
    other_secrets = forms.CharField(
        label="other secrets",
        required=False,
        widget=WriteOnlyTextarea(attrs={"rows": 2, "cols": 80, "autocomplete": "off"}),
        help_text="Secret headers, KEY=VALUE one a line (header__authorization=Bearer ...). Write-only.",
    )
    remove_secrets = forms.MultipleChoiceField(
        label="remove secrets", required=False, widget=forms.CheckboxSelectMultiple
    )
    # One per key of SECRET_FIELDS (a key added there without its field here fails the admin's tests).
    secret_access_token = _secret_field("access_token")
    secret_app_secret = _secret_field("app_secret")
    secret_client_secret = _secret_field("client_secret")
    secret_developer_token = _secret_field("developer_token")
    secret_refresh_token = _secret_field("refresh_token")
    secret_secret = _secret_field("secret")

    class Meta:
        model = OutboxDestination
        fields = ("provider", "name", "enabled")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        stored = self.instance.secret_keys + [k for k in self.instance.settings if is_secret_key(k)]
        self.fields["remove_secrets"].choices = [(k, k) for k in sorted(set(stored))]
        if not self.instance._state.adding:
            self.initial.setdefault("settings_text", settings_lines(self.instance.settings))

    def clean_name(self):
        try:
            return check_name("destination", self.cleaned_data["name"])
        except ValueError as error:
            raise ValidationError(str(error)) from None

    def clean_settings_text(self):
        values = parse_lines(self.cleaned_data.get("settings_text", ""))
        secret = sorted(k for k in values if is_secret_key(k))
        if secret:
            raise ValidationError(f"{', '.join(secret)}: a secret goes in the write-only secret fields, never here")
        return {k: v for k, v in values.items() if v}  # KEY= (empty) is a key left out

    def clean_other_secrets(self):
        values = parse_lines(self.cleaned_data.get("other_secrets", ""))
        for key, value in values.items():
            if not is_secret_key(key):
                raise ValidationError(f"{key} is not a secret: put it in the settings")
            if not value:
                raise ValidationError(f"{key} is empty: tick it under 'remove secrets' to remove it")
        return values

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        provider = data.get("provider", self.instance.provider)
        name = data.get("name", self.instance.name)
        settings = self._settings_change(data["settings_text"])
        secrets = self._secrets_change(data)
        try:
            self.settings_change, self.secrets_change = check_destination(provider, name, settings, secrets)
        except ValueError as error:
            raise ValidationError(str(error)) from None
        if any(secrets.values()) and not sealing_key_published(router.db_for_write(OutboxDestination)):
            raise ValidationError("no sealing key is published: run `dispatcher keys publish` where the key file is")
        return data

    def _settings_change(self, wanted: Dict[str, str]) -> Dict[str, str]:
        """Only what changes: keys whose value differs, and "" for each key left out."""
        current = {k: v for k, v in self.instance.settings.items() if not is_secret_key(k)}
        change = {k: v for k, v in wanted.items() if current.get(k) != v}
        change.update({k: "" for k in current if k not in wanted})
        return change

    def _secrets_change(self, data) -> Dict[str, str]:
        secrets = {key: data[field] for key, field in SECRET_FIELDS.items() if data.get(field)}
        for key, value in data.get("other_secrets", {}).items():
            if key in secrets:
                raise ValidationError(f"secret {key} is given twice")
            secrets[key] = value
        for key in data.get("remove_secrets", []):
            if key in secrets:
                raise ValidationError(f"secret {key} is both set and removed")
            secrets[key] = ""  # set_destination removes it, from the plain settings too
        return secrets

    def change_summary(self, add: bool) -> str:
        """For the admin's history: key names and what happened to them, never a value."""
        parts = ["added"] if add else []
        if not add and "enabled" in self.changed_data:
            parts.append("enabled" if self.cleaned_data["enabled"] else "disabled")
        parts += _what_happened("setting", self.settings_change, self.instance.settings)
        parts += _what_happened("secret", self.secrets_change, self.instance.secrets)
        return "; ".join(parts) if parts else "No fields changed."


def _what_happened(kind: str, change: Dict[str, str], current: Iterable[str]) -> list:
    return [
        f"{kind} {key} {'removed' if not value else 'changed' if key in current else 'set'}"
        for key, value in sorted(change.items())
    ]
