"""The table of rates counted in the database (RateWindow), for the caches that cull their keys."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("segment_seq_service", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="RateWindow",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("key", models.CharField(max_length=200, unique=True, verbose_name="window")),
                ("count", models.PositiveIntegerField(default=0, verbose_name="requests")),
                (
                    "ends_at",
                    models.FloatField(
                        help_text="When the window ends, in seconds since the epoch.", verbose_name="ends at"
                    ),
                ),
            ],
            options={
                "verbose_name": "ID service rate window",
                "verbose_name_plural": "ID service rate windows",
            },
        ),
    ]
