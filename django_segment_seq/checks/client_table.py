"""The ID service's client table, kept by migration 0012 when it holds rows and the service app is not installed:
rows nothing reads are said, never dropped."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core import checks
from django.db import DatabaseError, connections

from django_segment_seq.db.client_table import CLIENT_TABLE, SERVICE_APP, client_rows
from django_segment_seq.db.routing import sequence_database


@checks.register(checks.Tags.database)
def check_client_table_left(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The ID service's clients, left in the table migration 0012 keeps when the service app is not installed."""
    alias = sequence_database()
    if apps.is_installed(SERVICE_APP) or not databases or alias not in databases:
        return []
    try:
        rows = client_rows(connections[alias])
    except DatabaseError:
        return []  # the database is away: other checks and the first query say so
    if not rows:
        return []
    return [
        checks.Warning(
            f"Table {CLIENT_TABLE} in database {alias!r} holds {rows} ID service client(s), but the ID service app "
            "is not installed: nothing reads the rows, and migrations keep them (never dropped).",
            hint=f'Add "{SERVICE_APP}" to INSTALLED_APPS after "django_segment_seq" and migrate, or drop the table '
            "yourself if the clients are no longer wanted; see docs/id-service.md.",
            id="django_segment_seq.W006",
        )
    ]
