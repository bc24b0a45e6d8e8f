"""The ID service's Client model leaves the core app for the service app (django_segment_seq.service), in the
migration state only: the table django_segment_seq_client and its rows stay where 0009 made them, and the service
app's 0001 takes the model over under the same table name.

A project that does not install the service app: an empty client table is dropped here; a table holding clients
is kept, rows and all, and `manage.py check --database` warns of it (django_segment_seq.W006).
"""

from django.apps import apps as installed_apps
from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from django_segment_seq.db.client_table import SERVICE_APP, client_rows


def drop_if_unused(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Without the service app, nothing will read the table: dropped when empty, never when it holds a client."""
    if installed_apps.is_installed(SERVICE_APP):
        return  # the service app's 0001 takes the table over
    if client_rows(schema_editor.connection) == 0:
        schema_editor.delete_model(apps.get_model("django_segment_seq", "Client"))


def restore_if_dropped(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Back to 0011, whose state has the table: made again (empty) when this migration dropped it."""
    if client_rows(schema_editor.connection) is None:
        schema_editor.create_model(apps.get_model("django_segment_seq", "Client"))


class Migration(migrations.Migration):
    dependencies = [
        ("django_segment_seq", "0011_client_rows"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="Client")],
            # DDL: MySQL refuses it in a transaction, so not wrapped in one.
            database_operations=[migrations.RunPython(drop_if_unused, restore_if_dropped, atomic=False)],
        ),
    ]
