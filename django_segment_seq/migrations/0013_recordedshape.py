from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_segment_seq", "0012_client_to_service_app"),
    ]

    operations = [
        migrations.CreateModel(
            name="RecordedShape",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("sequence_name", models.CharField(max_length=100, unique=True, verbose_name="sequence name")),
                ("format", models.TextField(blank=True, verbose_name="format")),
                ("reset", models.CharField(blank=True, max_length=200, verbose_name="reset")),
                ("scope", models.CharField(blank=True, max_length=100, verbose_name="scope")),
                ("recorded", models.DateTimeField(auto_now_add=True, verbose_name="recorded")),
            ],
            options={
                "verbose_name": "recorded shape",
                "verbose_name_plural": "recorded shapes",
            },
        ),
    ]
