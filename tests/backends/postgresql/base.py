"""PostgreSQL as the suite runs it: Django's own backend, except that a test's flush deletes rows instead of
truncating every table.

The suite flushes after each of about a thousand transactional tests. A TRUNCATE of all the tables took 0.2 to 0.45 s
on the 2-core machine (a new file per table, a buffer scan each), a DELETE of the few rows a test leaves a tenth of
that; Django's MySQL backend flushes with DELETE for the same reason. A flush that must also reset sequences or
cascade is Django's own.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base, operations


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(
        self, style: Any, tables: Any, *, reset_sequences: bool = False, allow_cascade: bool = False
    ) -> list[str]:
        if reset_sequences or allow_cascade or not tables:
            return super().sql_flush(style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        # Django makes foreign keys DEFERRABLE INITIALLY DEFERRED, so the order of the DELETEs does not matter.
        return ["SET CONSTRAINTS ALL DEFERRED;", *(f"DELETE FROM {self.quote_name(table)};" for table in tables)]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
