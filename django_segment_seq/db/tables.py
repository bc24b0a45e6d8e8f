"""Whether a table exists yet: `migrate` runs the database checks before it creates the app's tables, so a check that
reads one asks this first and says nothing about a table still to come."""

from __future__ import annotations

from django.db.backends.base.base import BaseDatabaseWrapper


def has_table(connection: BaseDatabaseWrapper, table: str) -> bool:
    """Whether `table` exists in the database behind `connection` (asked of the catalogue, so no failed query
    leaves a transaction aborted on PostgreSQL)."""
    with connection.cursor() as cursor:
        return table in connection.introspection.table_names(cursor)
