"""Whether the caller's own transaction holds a Sequence row, which any other connection would have to wait for.

Only then may a block be taken inside that transaction: a row another transaction held for a
moment must never pull numbers into the caller's transaction, where a rollback would give them back.
PostgreSQL answers exactly (see statements.CALLER_HOLDS_ROW). MariaDB cannot tell which rows a
transaction locked, so the statements a caller's atomic block sends are watched: one that writes
or locks the Sequence table marks that block, until it commits or rolls back. SQLite's single
write lock is the sqlite module's business.
"""

from __future__ import annotations

import re
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.dispatch import receiver

from . import sqlite
from .statements import statements_for
from .txblocks import Held, TransactionMemory

# Per caller connection: a mark while its atomic block has written or locked the Sequence table.
_marks = TransactionMemory()
_TABLE_KEY = "*"
_WRITES_OR_LOCKS = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE)\b|\bFOR\s+UPDATE\b|\bLOCK\s+IN\s+SHARE\s+MODE\b|\bFOR\s+SHARE\b", re.I)


def caller_holds_row(connection: BaseDatabaseWrapper, name: str) -> bool:
    """Whether the caller's open transaction on `connection` holds row `name` (or SQLite's write lock)."""
    if connection.vendor == "sqlite":
        return sqlite.holds_write_lock(connection)
    sql = statements_for(connection).caller_holds_row
    if sql is not None:
        with connection.cursor() as cursor:
            cursor.execute(sql, [name])
            return cursor.fetchone() is not None
    return _marks.get(connection, _TABLE_KEY) is not None


def _table_name() -> str:
    from .models import Sequence

    return str(Sequence._meta.db_table)


def _watch(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    """An execute wrapper: marks the caller's atomic block once it writes or locks the Sequence table."""
    result = execute(sql, params, many, context)
    connection = context["connection"]
    if connection.in_atomic_block and _table_name() in sql and _WRITES_OR_LOCKS.search(sql):
        if _marks.get(connection, _TABLE_KEY) is None:
            _marks.keep(connection, connection.alias, _TABLE_KEY, Held(0, -1))
    return result


@receiver(connection_created)
def _install_watch(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    if connection.vendor != "mysql" or _watch in connection.execute_wrappers:
        return
    # First in the list: execute_wrapper() blocks append and pop at the end.
    connection.execute_wrappers.insert(0, _watch)
