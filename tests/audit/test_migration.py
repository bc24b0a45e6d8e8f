"""The register's table ships with migration 0007, and the models need no migration beyond it."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from django_segment_seq.models import VoidedNumber

pytestmark = pytest.mark.django_db


def test_migration_0007_creates_the_register_after_the_server_history():
    loader = MigrationLoader(connection)
    migration = loader.get_migration("django_segment_seq", "0007_voided_number")
    assert migration.dependencies == [("django_segment_seq", "0006_sequence_history")]
    assert [operation.name for operation in migration.operations] == ["VoidedNumber"]
    assert len(loader.graph.leaf_nodes("django_segment_seq")) == 1  # one line of migrations, no branch to merge


def test_the_models_need_no_new_migration():
    out = StringIO()
    call_command("makemigrations", "django_segment_seq", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


def test_the_table_was_migrated():
    assert VoidedNumber._meta.db_table in connection.introspection.table_names()
