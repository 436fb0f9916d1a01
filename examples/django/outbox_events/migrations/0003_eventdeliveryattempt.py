# managed=False: records the attempts-log model in Django's migration state and
# changes nothing in the database (event_delivery_attempt is the dispatcher's,
# created by migration 0002's sql/0001_event_delivery.sql).

from django.db import migrations, models
import django.db.models.deletion


class Migration(migrations.Migration):

    dependencies = [
        ("outbox_events", "0002_dispatcher_schema"),
    ]

    operations = [
        migrations.CreateModel(
            name="EventDeliveryAttempt",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("attempt", models.IntegerField(editable=False)),
                ("started_at", models.DateTimeField(editable=False)),
                ("duration_ms", models.IntegerField(editable=False)),
                ("outcome", models.TextField(editable=False)),
                ("http_status", models.IntegerField(editable=False, null=True)),
                ("error", models.TextField(editable=False, null=True)),
                ("response_excerpt", models.TextField(editable=False, null=True)),
                ("lease_owner", models.TextField(editable=False, null=True)),
                ("note", models.TextField(editable=False, null=True)),
                ("provider_request_id", models.TextField(editable=False, null=True)),
                (
                    "delivery",
                    models.ForeignKey(
                        db_column="delivery_id",
                        db_constraint=False,
                        editable=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="attempt_log",
                        to="outbox_events.eventdelivery",
                    ),
                ),
            ],
            options={
                "verbose_name": "delivery attempt",
                "verbose_name_plural": "delivery attempts",
                "db_table": "event_delivery_attempt",
                "ordering": ["id"],
                "managed": False,
            },
        ),
    ]
