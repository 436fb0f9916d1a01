from django.apps import AppConfig


class CrmConfig(AppConfig):
    name = "crm"
    verbose_name = "CRM (example)"
    default_auto_field = "django.db.models.BigAutoField"
