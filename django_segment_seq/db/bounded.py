"""Statements on a connection the app shares with its caller: every lock wait bounded, every error kept to itself.

The caller's session settings are the project's, so the app bounds its own statements without
changing them for longer than those statements run: on MariaDB each statement carries its bound
(see statements.MYSQL_BOUND); on PostgreSQL the lock timeout is set around the app's statements,
for the session or for a savepoint inside the caller's transaction, and put back after.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from typing import Any

from django.db import DatabaseError, InterfaceError
from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.conf import app_settings
from django_segment_seq.db.statements import (
    COMMIT,
    PG_SET_LOCK_TIMEOUT,
    PG_SWAP_LOCK_TIMEOUT,
    PG_SWAP_SESSION_LOCK_TIMEOUT,
    RELEASE_SAVEPOINT,
    ROLLBACK,
    ROLLBACK_TO_SAVEPOINT,
    SAVEPOINT,
    SESSION_LOCK_TIMEOUT,
    SESSION_LOCK_WAITS,
    Statements,
    pg_lock_timeout,
    session_lock_timeout_params,
)

# Savepoint names of the app's own, distinct from Django's (s<thread>_x<n>) and from each other.
_savepoints = itertools.count(1)


class _Undo(Exception):
    """Ends a savepoint whose work is to be undone though nothing failed."""


@contextmanager
def in_savepoint(connection: BaseDatabaseWrapper, lock_timeout: float, *, keep: bool = True) -> Iterator[Any]:
    """A cursor inside a savepoint of the caller's open transaction (atomic() or a raw BEGIN alike).

    An error rolls back what was sent here and nothing of the caller's, and so does the end of a
    probe that must leave no trace (`keep=False`); on PostgreSQL the caller's own lock_timeout is
    restored whatever happens.
    """
    savepoint = f"segment_seq_{next(_savepoints)}"
    with connection.cursor() as cursor:
        cursor.execute(SAVEPOINT.format(savepoint=savepoint))
        try:
            restore = None
            if connection.vendor == "postgresql":
                cursor.execute(PG_SWAP_LOCK_TIMEOUT, [pg_lock_timeout(lock_timeout)])
                restore = cursor.fetchone()[0]
            yield cursor
            if not keep:
                raise _Undo
            if restore is not None:
                cursor.execute(PG_SET_LOCK_TIMEOUT, [restore])
        except _Undo:
            cursor.execute(ROLLBACK_TO_SAVEPOINT.format(savepoint=savepoint))
            cursor.execute(RELEASE_SAVEPOINT.format(savepoint=savepoint))
            return
        except BaseException:
            # Rolling back to the savepoint also undoes the lock timeout set in it.
            with suppress(DatabaseError, InterfaceError):  # a dead connection: its transaction is gone anyway
                cursor.execute(ROLLBACK_TO_SAVEPOINT.format(savepoint=savepoint))
                cursor.execute(RELEASE_SAVEPOINT.format(savepoint=savepoint))
            raise
        cursor.execute(RELEASE_SAVEPOINT.format(savepoint=savepoint))


@contextmanager
def write_transaction(cursor: Any, sql: Statements, *, callers: bool = False) -> Iterator[None]:
    """The app's own writes on a connection outside any transaction.

    SQLite: BEGIN IMMEDIATE ... COMMIT, so the write lock is taken before reading; elsewhere each
    statement commits by itself. On the caller's connection (`callers`) PostgreSQL's lock timeout
    is the project's setting: it is set for these statements and put back after them (a private
    connection has the bound for its whole session; MariaDB's statements carry theirs).
    """
    # MariaDB's statements carry their bound, SQLite has no lock timeout: only PostgreSQL's session needs one.
    bounds = bounded_session(cursor) if callers and cursor.db.vendor == "postgresql" else nullcontext()
    with bounds:
        if sql.begin_write is None:
            yield
            return
        cursor.execute(sql.begin_write)
        try:
            yield
        except BaseException:
            with suppress(DatabaseError, InterfaceError):  # the connection is broken; it is dropped or recycled
                cursor.execute(ROLLBACK)
            raise
        cursor.execute(COMMIT)


@contextmanager
def bounded_session(cursor: Any) -> Iterator[None]:
    """LOCK_TIMEOUT for every lock wait of the cursor's session while the block runs, the session's own values after.

    PostgreSQL swaps in one round trip; MariaDB reads its two timeouts, then sets both. SQLite waits
    with the connection's own timeout.
    """
    vendor = cursor.db.vendor
    if vendor not in SESSION_LOCK_TIMEOUT:
        yield
        return
    params = session_lock_timeout_params(vendor, app_settings()["LOCK_TIMEOUT"])
    if vendor == "postgresql":
        cursor.execute(PG_SWAP_SESSION_LOCK_TIMEOUT, params)
        restore = [cursor.fetchone()[0]]
    else:
        cursor.execute(SESSION_LOCK_WAITS[vendor])
        restore = list(cursor.fetchone())
        cursor.execute(SESSION_LOCK_TIMEOUT[vendor], params)
    try:
        yield
    finally:
        with suppress(DatabaseError, InterfaceError):  # a dead session keeps no setting
            cursor.execute(SESSION_LOCK_TIMEOUT[vendor], restore)


@contextmanager
def session_bounds(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """bounded_session() for the app's own work on a connection nobody else uses meanwhile (a management command)."""
    with connection.cursor() as cursor, bounded_session(cursor):
        yield
