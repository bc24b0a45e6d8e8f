"""SQLite's single writer in one place: whether the caller's transaction holds the file's lock, and what that rules out.

One SQLite file has one write lock. A caller's transaction that has read or written holds a lock
that another connection's commit must wait for (or, in WAL mode, would make the caller's own next
write fail), so numbers are then taken inside that transaction. A transaction that has done nothing
yet holds nothing, and a private connection commits a range independently, waiting for the write
lock as any writer does. A background fetch is a writer the caller never asked for, so there is
none on a file the project's own tables share.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.dispatch import receiver

from django_segment_seq.conf import app_settings

# How long a caller whose transaction holds the write lock waits for another thread's hold on a
# sequence: that thread may itself be waiting for this caller's write lock.
SLOT_WAIT = 0.05

# Statements that take no lock of their own (a deferred BEGIN, savepoints).
_LOCK_FREE = ("BEGIN", "SAVEPOINT", "RELEASE", "ROLLBACK TO")


class _WriterState:
    """Whether the current transaction of one SQLite connection has run a statement that took a lock."""

    __slots__ = ("holds_lock",)

    def __init__(self) -> None:
        self.holds_lock = False


_STATE = "_segment_seq_sqlite_state"


def _track_locks(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    """An execute wrapper: notes when the caller's transaction starts holding a lock on the file."""
    connection = context["connection"]
    try:
        return execute(sql, params, many, context)
    finally:
        state: _WriterState = getattr(connection, _STATE)
        raw = connection.connection
        if raw is None or not raw.in_transaction:
            state.holds_lock = False
        else:
            head = sql.lstrip()[:40].upper()
            if head.startswith("BEGIN"):
                state.holds_lock = "IMMEDIATE" in head or "EXCLUSIVE" in head
            elif not head.startswith(_LOCK_FREE):
                state.holds_lock = True


@receiver(connection_created)
def _install_tracker(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    if connection.vendor != "sqlite" or _track_locks in connection.execute_wrappers:
        return
    setattr(connection, _STATE, _WriterState())
    # First in the list: execute_wrapper() blocks append and pop at the end.
    connection.execute_wrappers.insert(0, _track_locks)


def holds_write_lock(connection: BaseDatabaseWrapper) -> bool:
    """Whether the caller's SQLite transaction has taken a lock another connection's commit would wait for."""
    if connection.vendor != "sqlite":
        return False
    raw = connection.connection
    if raw is None or not raw.in_transaction:
        return False
    state: _WriterState | None = getattr(connection, _STATE, None)
    # A connection opened before the app was loaded is not tracked: assume the worst.
    return True if state is None else state.holds_lock


def shares_file(alias: str) -> bool:
    """Whether the project's own tables may live in this SQLite database, so its lock is theirs too.

    Only a file of its own, named by SEGMENT_SEQ['DATABASE'] (with SequenceRouter) and by no other
    alias, is known to hold nothing but the Sequence table.
    """
    if connections[alias].vendor != "sqlite":
        return False
    if alias == DEFAULT_DB_ALIAS or app_settings()["DATABASE"] != alias:
        return True
    name = settings.DATABASES[alias].get("NAME")
    return any(other != alias and db.get("NAME") == name for other, db in settings.DATABASES.items())


def prefetch_allowed(alias: str) -> bool:
    """A background fetch commits while the caller's transactions run: never on a shared SQLite file."""
    return not shares_file(alias)


def transaction_mode(alias: str) -> str | None:
    """The alias's OPTIONS["transaction_mode"] (Django 5.1+), or None; read defensively, as settings are user input."""
    options = settings.DATABASES[alias].get("OPTIONS")
    mode = options.get("transaction_mode") if isinstance(options, dict) else None
    return mode if isinstance(mode, str) else None


def immediate_transactions(alias: str) -> bool:
    """Whether transactions on this SQLite alias take the write lock at BEGIN (transaction_mode IMMEDIATE/EXCLUSIVE)."""
    mode = transaction_mode(alias)
    return mode is not None and mode.upper() in ("IMMEDIATE", "EXCLUSIVE")
