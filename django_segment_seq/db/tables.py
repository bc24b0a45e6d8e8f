"""Whether a table exists yet: `migrate` runs the database checks before it creates the app's tables, so a check that
reads one asks this first and says nothing about a table still to come."""

from __future__ import annotations

import sys

from django.db.backends.base.base import BaseDatabaseWrapper


def has_table(connection: BaseDatabaseWrapper, table: str) -> bool:
    """Whether `table` exists in the database behind `connection` (asked of the catalogue, so no failed query
    leaves a transaction aborted on PostgreSQL)."""
    with connection.cursor() as cursor:
        return table in connection.introspection.table_names(cursor)


MIGRATE_COMMAND = "django.core.management.commands.migrate"


def migrate_running() -> bool:
    """Whether these checks run inside `manage.py migrate`, which runs the database checks before it makes the tables:
    a check that says "run migrate" is then beside the point (Django tells checks nothing of who runs them)."""
    frame = sys._getframe(1)
    while frame is not None:
        # Inside the command's own code, or its BaseCommand.execute(), which runs the checks before handle().
        command = frame.f_locals.get("self")
        if MIGRATE_COMMAND in (frame.f_globals.get("__name__"), type(command).__module__):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False
