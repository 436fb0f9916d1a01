# managed=False: records in Django's migration state the two columns that the
# dispatcher's sql/0013_personal_data.sql added to event_delivery (applied by
# migration 0002); changes nothing in the database.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("outbox_events", "0004_outboxdestination"),
    ]

    operations = [
        migrations.AddField(
            model_name="eventdelivery",
            name="personal_data_erased_at",
            field=models.DateTimeField(editable=False, null=True),
        ),
        migrations.AddField(
            model_name="eventdelivery",
            name="personal_data_erased_why",
            field=models.TextField(editable=False, null=True),
        ),
    ]
