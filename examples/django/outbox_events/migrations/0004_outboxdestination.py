# managed=False: records the registry model in Django's migration state and
# changes nothing in the database (outbox_destination is the dispatcher's,
# created by migration 0002's sql/0010_destination_registry.sql). Its primary
# key is (provider, name); "key" is no column (outbox_events.models.RegistryKeyField).

from django.db import migrations, models
import outbox_events.models


class Migration(migrations.Migration):

    dependencies = [
        ("outbox_events", "0003_eventdeliveryattempt"),
    ]

    operations = [
        migrations.CreateModel(
            name="OutboxDestination",
            fields=[
                ("key", outbox_events.models.RegistryKeyField(editable=False, primary_key=True, serialize=False)),
                ("provider", models.TextField()),
                ("name", models.TextField()),
                ("settings", models.JSONField(default=dict, editable=False)),
                ("secrets", models.JSONField(default=dict, editable=False)),
                ("enabled", models.BooleanField(default=True)),
                ("created_at", models.DateTimeField(editable=False)),
                ("updated_at", models.DateTimeField(editable=False)),
                ("updated_by", models.TextField(editable=False)),
            ],
            options={
                "verbose_name": "destination",
                "verbose_name_plural": "destinations",
                "db_table": "outbox_destination",
                "ordering": ["provider", "name"],
                "managed": False,
            },
        ),
    ]
