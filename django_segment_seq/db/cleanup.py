"""The statements that put the Sequence table back between a project's tests (testing.reset_sequences), quoted
the connection's way, each waiting at most LOCK_TIMEOUT for a lock on MariaDB."""

from __future__ import annotations

from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.conf import app_settings
from django_segment_seq.db.columns import column_of
from django_segment_seq.db.statements import MYSQL_BOUND, PG_SET_LOCK_TIMEOUT, mysql_lock_wait, pg_lock_timeout
from django_segment_seq.db.table import Sequence


class CleanupStatements:
    """Rows created since a moment are deleted; rows moved since are reset to hand out their min_value next."""

    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        quote = connection.ops.quote_name
        self.vendor = connection.vendor
        self.lock_wait = float(app_settings()["LOCK_TIMEOUT"])
        self.table = quote(Sequence._meta.db_table)
        self.id, self.name, self.created, self.modified, self.value, self.min_value, self.version = (
            quote(column_of(Sequence, field))
            for field in ("id", "name", "created", "modified", "value", "min_value", "version")
        )
        self.moved = f"({self.created} >= %s OR {self.modified} >= %s)"

    def bounded(self, sql: str) -> str:
        """`sql` waiting at most LOCK_TIMEOUT for a row or table lock on MariaDB (PostgreSQL: bound_transaction)."""
        return MYSQL_BOUND.format(lock_wait=mysql_lock_wait(self.lock_wait)) + sql if self.vendor == "mysql" else sql

    def bound_transaction(self) -> tuple[str, list[str]] | None:
        """PostgreSQL: the statement that bounds every lock wait until the current transaction ends."""
        return (PG_SET_LOCK_TIMEOUT, [pg_lock_timeout(self.lock_wait)]) if self.vendor == "postgresql" else None

    def delete_created_since(self) -> str:
        return self.bounded(f"DELETE FROM {self.table} WHERE {self.created} >= %s")

    def reset(self, where: str | None = None) -> str:
        """An UPDATE that makes the rows (those matching `where`) hand out their min_value next."""
        value, min_value, version = self.value, self.min_value, self.version
        return self.bounded(
            f"UPDATE {self.table} SET {value} = {min_value} - 1, {version} = {version} + 1 "
            f"WHERE {value} <> {min_value} - 1" + (f" AND {where}" if where else "")
        )

    def reset_modified_since(self) -> str:
        return self.reset(f"{self.modified} >= %s")

    def select_moved(self) -> str:
        """The id and name of every row created or moved since the moment (given twice)."""
        return self.bounded(f"SELECT {self.id}, {self.name} FROM {self.table} WHERE {self.moved}")

    def lock_moved_unless_locked(self) -> str:
        """Lock the rows created or moved since the moment, skipping those another transaction holds."""
        return self.bounded(f"SELECT {self.id} FROM {self.table} WHERE {self.moved} FOR UPDATE SKIP LOCKED")

    def lock_row(self) -> str:
        """Lock one row by id, waiting at most LOCK_TIMEOUT for the transaction that holds it."""
        return self.bounded(f"SELECT {self.id} FROM {self.table} WHERE {self.id} = %s FOR UPDATE")

    def delete_created_among(self, count: int) -> str:
        """Delete those of `count` rows (by id) created since the moment (the last parameter)."""
        ids = ", ".join(["%s"] * count)
        return self.bounded(f"DELETE FROM {self.table} WHERE {self.id} IN ({ids}) AND {self.created} >= %s")

    def reset_among(self, count: int) -> str:
        return self.reset(f"{self.id} IN ({', '.join(['%s'] * count)})")
