from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    # Not needed for the Lead table itself: shows how a CRM migration that uses
    # event_delivery (a view, a trigger, a data migration that enqueues) runs
    # after the dispatcher's schema exists.
    dependencies = [
        ("outbox_events", "0002_dispatcher_schema"),
    ]

    operations = [
        migrations.CreateModel(
            name="Lead",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("email", models.EmailField(max_length=254)),
                ("phone", models.CharField(blank=True, max_length=32)),
                (
                    "stage",
                    models.CharField(
                        choices=[("new", "new"), ("qualified", "qualified")], default="new", max_length=16
                    ),
                ),
                ("gclid", models.CharField(blank=True, max_length=128)),
            ],
        ),
    ]
