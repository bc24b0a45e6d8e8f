"""SQLite's single writer: a file shared by the Sequence table and the caller's rows, locked at BEGIN, leaves no
room for the independent commit that keeps numbers from coming back on a rollback."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from django_segment_seq.db import sqlite
from django_segment_seq.db.routing import sequence_database


@checks.register()
def check_sqlite_single_writer(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A shared SQLite file whose transactions take the write lock at BEGIN leaves no room for an independent commit."""
    alias = sequence_database()
    if alias not in settings.DATABASES or not sqlite.shares_file(alias) or not sqlite.immediate_transactions(alias):
        return []
    return [
        checks.Warning(
            f"Database {alias!r} is SQLite with transaction_mode "
            f"{sqlite.transaction_mode(alias)!r} and also holds the Sequence table: every "
            "transaction holds the file's write lock from its first statement, so numbers taken inside a transaction "
            "are taken there too and come back if it rolls back.",
            hint="Keep the Sequence table in a SQLite file of its own: SEGMENT_SEQ['DATABASE'] naming a second "
            "database and 'django_segment_seq.routers.SequenceRouter' in DATABASE_ROUTERS.",
            id="django_segment_seq.W001",
        )
    ]
