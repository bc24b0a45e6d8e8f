"""The ID service's client table as the core app leaves it: created by its migrations 0009 and 0011 and handed to
the service app (django_segment_seq.service) by 0012, it stays behind with its rows in a project that does not
install that app, and is never dropped while it holds any."""

from __future__ import annotations

from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.db.tables import has_table

# The table's name since 0009, kept by the service app's model (db_table), so no row moves.
CLIENT_TABLE = "django_segment_seq_client"
SERVICE_APP = "django_segment_seq.service"


def client_rows(connection: BaseDatabaseWrapper) -> int | None:
    """How many clients the table holds on this connection; None when there is no such table."""
    if not has_table(connection, CLIENT_TABLE):
        return None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(CLIENT_TABLE)}")
        row = cursor.fetchone()
    return int(row[0]) if row else 0
