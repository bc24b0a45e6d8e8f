from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_segment_seq", "0010_deployment"),
    ]

    operations = [
        migrations.AddField(
            model_name="client",
            name="max_new_rows",
            field=models.PositiveIntegerField(
                default=0,
                help_text=(
                    "How many new sequences the client may create by naming them; 0 (the default): only sequences "
                    "that exist or a field declares."
                ),
                verbose_name="rows it may create",
            ),
        ),
        migrations.AddField(
            model_name="client",
            name="rows_created",
            field=models.PositiveIntegerField(default=0, editable=False, verbose_name="rows created"),
        ),
    ]
