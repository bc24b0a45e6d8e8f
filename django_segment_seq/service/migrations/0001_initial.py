"""The Client model, taken over from the core app (its migration 0012) with the table and rows it has there.

The table keeps its name (django_segment_seq_client) and is made only when missing: in a project that never had
the ID service (then with the columns, their order and the index names that 0009 and 0011 give it). The model's
content type follows it to this app, so the permissions tied to it (use_id_service among them), the groups and
users granted them and the admin's log entries come along.
"""

from django.db import connections, migrations, models, router
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

import django_segment_seq.service.models
from django_segment_seq.db.client_table import client_rows

CORE_LABEL, SERVICE_LABEL = "django_segment_seq", "segment_seq_service"


def create_table_if_missing(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """A project that ran the core app's 0009 has the table, rows and all; any other gets it here, empty."""
    if client_rows(schema_editor.connection) is None:
        schema_editor.create_model(apps.get_model(SERVICE_LABEL, "Client"))


def keep_table(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Back to the core app's state: the table and its rows stay, for its 0012 to take back."""


def relabel(apps: StateApps, old: str, new: str) -> None:
    """The client content type moved from one app label to the other, in the database the contenttypes app writes.

    Its id stays, so every Permission, group or user grant and admin LogEntry pointing at it comes along. Nothing to
    do without django.contrib.contenttypes or before its table exists (a fresh database: contenttypes makes the row
    after migrate). A row under the other label already (made by a migrate run after the code was upgraded and
    before this migration) holds only permissions made then: it gives way, with them, to the row that has the
    project's history.
    """
    try:
        content_type = apps.get_model("contenttypes", "ContentType")
    except LookupError:
        return
    alias = router.db_for_write(content_type)
    if content_type._meta.db_table not in connections[alias].introspection.table_names():
        return
    rows = content_type.objects.using(alias)
    if rows.filter(app_label=old, model="client").exists():
        rows.filter(app_label=new, model="client").delete()
        rows.filter(app_label=old, model="client").update(app_label=new)
    content_type.objects.clear_cache()


def to_service_app(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    relabel(apps, CORE_LABEL, SERVICE_LABEL)


def to_core_app(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    relabel(apps, SERVICE_LABEL, CORE_LABEL)


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("django_segment_seq", "0012_client_to_service_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Client",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=100, unique=True, verbose_name="name")),
                        (
                            "token_start",
                            models.CharField(
                                editable=False,
                                help_text="The start of the token, to tell tokens apart.",
                                max_length=20,
                                verbose_name="token",
                            ),
                        ),
                        (
                            "token_digest",
                            models.CharField(editable=False, max_length=64, unique=True, verbose_name="token digest"),
                        ),
                        (
                            "previous_digest",
                            models.CharField(
                                blank=True,
                                db_index=True,
                                default="",
                                max_length=64,
                                verbose_name="previous token digest",
                            ),
                        ),
                        (
                            "previous_valid_until",
                            models.DateTimeField(
                                blank=True,
                                help_text="After a rotation, the grace period's end.",
                                null=True,
                                verbose_name="previous token valid until",
                            ),
                        ),
                        (
                            "sequences",
                            models.TextField(
                                help_text='Shell-style patterns of what the client may take, separated by commas: sequence names ("order*"), field labels ("shop.Order.number") or Snowflake layouts ("snowflake:classic").',
                                verbose_name="sequences",
                            ),
                        ),
                        ("max_count", models.PositiveIntegerField(default=1000, verbose_name="largest count")),
                        (
                            "rate",
                            models.CharField(
                                blank=True,
                                default="",
                                help_text="Requests per window, e.g. 50/s or 1000/m; empty for no limit.",
                                max_length=20,
                                validators=[django_segment_seq.service.models.validate_rate],
                                verbose_name="rate",
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created")),
                        ("revoked_at", models.DateTimeField(blank=True, null=True, verbose_name="revoked")),
                        (
                            "last_used_at",
                            models.DateTimeField(blank=True, editable=False, null=True, verbose_name="last use"),
                        ),
                        ("requests", models.BigIntegerField(default=0, editable=False, verbose_name="requests served")),
                        (
                            "numbers",
                            models.BigIntegerField(default=0, editable=False, verbose_name="numbers handed out"),
                        ),
                        (
                            "max_new_rows",
                            models.PositiveIntegerField(
                                default=0,
                                help_text=(
                                    "How many new sequences the client may create by naming them; 0 (the default): only "
                                    "sequences that exist or a field declares."
                                ),
                                verbose_name="rows it may create",
                            ),
                        ),
                        (
                            "rows_created",
                            models.PositiveIntegerField(default=0, editable=False, verbose_name="rows created"),
                        ),
                    ],
                    options={
                        "verbose_name": "ID service client",
                        "verbose_name_plural": "ID service clients",
                        "db_table": "django_segment_seq_client",
                        "ordering": ["name"],
                        "permissions": [
                            ("use_id_service", "Can take numbers from the ID service with a login session")
                        ],
                    },
                ),
            ],
        ),
        # After the state's CreateModel, so the model is there to make the table from; DDL, which MySQL refuses
        # in a transaction, so not wrapped in one.
        migrations.RunPython(create_table_if_missing, keep_table, atomic=False),
        migrations.RunPython(to_service_app, to_core_app),
    ]
