"""What the caller's transaction on a connection means for allocation: SQLite's write lock, and commit hooks still queued."""

from __future__ import annotations

from collections.abc import Callable

from django.db.backends.base.base import BaseDatabaseWrapper


def in_sqlite_transaction(connection: BaseDatabaseWrapper) -> bool:
    """Whether the caller has a SQLite transaction open, which may hold the file's only write lock."""
    if connection.vendor != "sqlite":
        return False
    raw = connection.connection
    return connection.in_atomic_block or (raw is not None and raw.in_transaction)


def commit_hook_queued(connection: BaseDatabaseWrapper, callback: Callable[[], None] | None) -> bool:
    """Whether `callback` still waits in the connection's on_commit queue.

    Django drops the hooks of a rolled-back savepoint or transaction together with its writes, so a
    hook still queued means the writes made beside it still stand.
    """
    return callback is not None and any(func is callback for _sids, func, *_robust in connection.run_on_commit)
