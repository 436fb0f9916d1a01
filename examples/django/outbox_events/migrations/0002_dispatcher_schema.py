# The dispatcher's own schema (event_delivery, enqueue_event_delivery(...) and
# the rest of sql/NNNN_*.sql), applied the way `dispatcher migrate` applies it
# and recorded in outbox_schema_migrations, so the two agree whichever runs
# first. This is what gives Django's test database (built from migrations) the
# schema that enqueue_event needs. With settings.OUTBOX_EVENTS["APPLY_SCHEMA"]
# False it only checks that `dispatcher migrate` ran. See outbox_events/schema.py.
#
# Every migration the app's sql/ folder holds is applied, not a fixed list: a
# test database is built afresh and so always matches the dispatcher's sql/.
# A kept database (--keepdb, production) is brought up to date by
# `dispatcher migrate` (or `run --migrate`), never by editing this file.

from django.db import migrations

from outbox_events import conf, schema


def apply_schema(apps, schema_editor):
    if conf.apply_schema():
        schema.apply_dispatcher_schema(schema_editor.connection)
    else:
        schema.check_dispatcher_schema(schema_editor.connection)


class Migration(migrations.Migration):

    dependencies = [
        ("outbox_events", "0001_initial"),
    ]

    operations = [
        # Reversing leaves the dispatcher's tables (and their rows) in place.
        migrations.RunPython(apply_schema, migrations.RunPython.noop, elidable=False),
    ]
