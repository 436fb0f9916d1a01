from django.apps import AppConfig


class OutboxEventsConfig(AppConfig):
    name = "outbox_events"
    label = "outbox_events"
    verbose_name = "Outbox events"
    default_auto_field = "django.db.models.BigAutoField"
