from django.apps import AppConfig
from django.core import checks
from django.db import DEFAULT_DB_ALIAS, connections, router, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.db.models.signals import post_migrate

SCHEMA_MIGRATION = ("outbox_events", "0002_dispatcher_schema")


class OutboxEventsConfig(AppConfig):
    name = "outbox_events"
    label = "outbox_events"
    verbose_name = "Outbox events"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        checks.register(check_outbox_settings)
        post_migrate.connect(catch_up_dispatcher_schema, sender=self, dispatch_uid="outbox_events_schema")


def check_outbox_settings(app_configs=None, **kwargs):
    from .conf import check_settings

    problem = check_settings()
    return [checks.Error(problem, id="outbox_events.E001")] if problem else []


def catch_up_dispatcher_schema(sender, using=DEFAULT_DB_ALIAS, **kwargs):
    """After `migrate`: applies dispatcher migrations newer than the database.

    Migration 0002 runs once per database; a database kept between runs (a
    test database with --keepdb, a developer's) would miss a dispatcher
    migration added later. Nothing happens unless 0002 is applied, APPLY_SCHEMA
    is True and a migration is pending, so this costs two queries per `migrate`.
    """
    from . import conf, schema

    connection = connections[using]
    if not conf.apply_schema() or not router.allow_migrate(using, "outbox_events"):
        return
    if SCHEMA_MIGRATION not in MigrationRecorder(connection).applied_migrations():
        return
    shipped = schema.dispatcher_migrations()
    recorded = set(schema.applied_migrations(connection))
    if all(m.name in recorded for m in shipped):
        return
    with transaction.atomic(using=using):
        schema.apply_dispatcher_schema(connection, shipped)
