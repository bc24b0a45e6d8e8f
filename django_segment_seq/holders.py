"""Whether the caller's own transaction holds a Sequence row, which any other connection would have to wait for.

Only then may a block be taken inside that transaction: a row another transaction held for a
moment must never pull numbers into the caller's transaction, where a rollback would give them back.
The statements a caller's atomic block sends are watched: one that writes or locks the Sequence
table marks the rows it names (or the whole table when it names none, as an update by primary key
does) until the block commits or rolls back. PostgreSQL can also answer exactly for rows written or
locked outside a savepoint (see statements.CALLER_HOLDS_ROW), which covers raw SQL and manual
transactions. SQLite's single write lock is the sqlite module's business.
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
_WRITES_OR_LOCKS = re.compile(
    r"^\s*(INSERT|UPDATE|DELETE|REPLACE)\b|\bFOR\s+UPDATE\b|\bLOCK\s+IN\s+SHARE\s+MODE\b|\bFOR\s+SHARE\b", re.I
)


def caller_holds_row(connection: BaseDatabaseWrapper, name: str) -> bool:
    """Whether the caller's open transaction on `connection` holds row `name` (or SQLite's write lock)."""
    if connection.vendor == "sqlite":
        return sqlite.holds_write_lock(connection)
    if _marks.get(connection, name) is not None or _marks.get(connection, _TABLE_KEY) is not None:
        return True
    sql = statements_for(connection).caller_holds_row
    if sql is None:
        return False
    with connection.cursor() as cursor:
        cursor.execute(sql, [name])
        return cursor.fetchone() is not None


def _table_name() -> str:
    from .models import Sequence

    return str(Sequence._meta.db_table)


def _watch(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    """An execute wrapper: marks what the caller's atomic block writes or locks of the Sequence table."""
    result = execute(sql, params, many, context)
    connection = context["connection"]
    if connection.in_atomic_block and _table_name() in sql and _WRITES_OR_LOCKS.search(sql):
        rows = params if many else [params]
        names = {p for row in rows or () for p in (row or ()) if isinstance(p, str)}
        for key in names or {_TABLE_KEY}:
            if _marks.get(connection, key) is None:
                _marks.keep(connection, connection.alias, key, Held(0, -1))
    return result


@receiver(connection_created)
def _install_watch(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    if connection.vendor not in ("mysql", "postgresql") or _watch in connection.execute_wrappers:
        return
    # First in the list: execute_wrapper() blocks append and pop at the end.
    connection.execute_wrappers.insert(0, _watch)
