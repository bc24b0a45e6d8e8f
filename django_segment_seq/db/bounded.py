"""Statements on a connection the app shares with its caller: every lock wait bounded, every error kept to itself.

The caller's session settings are the project's, so the app bounds its own statements without
changing them for longer than those statements run: on MariaDB each statement carries its bound
(see statements.MYSQL_BOUND); on PostgreSQL the lock timeout is set around the app's statements,
for the session or for a savepoint inside the caller's transaction, and put back after.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from contextvars import ContextVar, Token
from typing import Any

from django.db import DatabaseError, InterfaceError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.dispatch import receiver

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
    restore = swapped_in_bound(cursor, vendor)
    try:
        yield
    finally:
        restore_session(cursor, vendor, restore)


def swapped_in_bound(cursor: Any, vendor: str) -> list[Any]:
    """Set LOCK_TIMEOUT for the session of `cursor` (Django's or the driver's own); the session's values before."""
    params = session_lock_timeout_params(vendor, app_settings()["LOCK_TIMEOUT"])
    if vendor == "postgresql":
        cursor.execute(PG_SWAP_SESSION_LOCK_TIMEOUT, params)
        return [cursor.fetchone()[0]]
    cursor.execute(SESSION_LOCK_WAITS[vendor])
    restore = list(cursor.fetchone())
    cursor.execute(SESSION_LOCK_TIMEOUT[vendor], params)
    return restore


def restore_session(cursor: Any, vendor: str, restore: list[Any]) -> None:
    """Put back the session's values that swapped_in_bound() returned."""
    with suppress(DatabaseError, InterfaceError):  # a dead session keeps no setting
        cursor.execute(SESSION_LOCK_TIMEOUT[vendor], restore)


class BoundAtFirstStatement:
    """An execute wrapper that sets LOCK_TIMEOUT for its connection's session just before the first statement the
    connection sends, so a block that sends none pays nothing; put_back() puts the session's own values back."""

    def __init__(self, vendor: str) -> None:
        self.vendor = vendor
        self.restore: list[Any] | None = None

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if self.restore is None:
            # The driver's own cursor: its statements pass no execute wrapper, this one included.
            self.restore = swapped_in_bound(context["cursor"].cursor, self.vendor)
        return execute(sql, params, many, context)

    def put_back(self, connection: BaseDatabaseWrapper) -> None:
        if self.restore is None or connection.connection is None:
            return  # none set, or the session it was set in is closed: nothing of it is left to put back
        with suppress(DatabaseError, InterfaceError), connection.cursor() as cursor:
            restore_session(cursor.cursor, self.vendor, self.restore)


class BoundWhenUsed:
    """bounded_when_used()'s block: a class rather than a generator, as it runs for every request's checks.

    It bounds the connections already built in this thread or task, and any the block builds and opens (through
    connection_created): naming one that is not built yet would build one for nothing under an ASGI server, where
    each request's sync work has a context, and so connections, of its own.
    """

    def __init__(self, aliases: Iterable[str]) -> None:
        self.aliases = tuple(dict.fromkeys(aliases))
        self.installed: list[tuple[BaseDatabaseWrapper, BoundAtFirstStatement]] = []
        self.outer: Token[BoundWhenUsed | None] | None = None

    def __enter__(self) -> None:
        for connection in connections.all(initialized_only=True):
            if connection.alias in self.aliases:
                self.install(connection)
        self.outer = inside.set(self)

    def install(self, connection: BaseDatabaseWrapper) -> None:
        wrappers = connection.execute_wrappers
        if connection.vendor in SESSION_LOCK_TIMEOUT and not any(
            isinstance(wrapper, BoundAtFirstStatement) for wrapper in wrappers
        ):
            bound = BoundAtFirstStatement(connection.vendor)
            wrappers.append(bound)  # as connection.execute_wrapper() does
            self.installed.append((connection, bound))

    def __exit__(self, *exc_info: object) -> None:
        assert self.outer is not None
        inside.reset(self.outer)
        outer = inside.get()
        for connection, bound in reversed(self.installed):
            if outer is not None and connection.alias in outer.aliases:
                outer.installed.append((connection, bound))  # opened in here: the outer block's bound from now on
                continue
            try:
                bound.put_back(connection)
            finally:
                connection.execute_wrappers.remove(bound)
        self.installed.clear()


# The bounded block this thread or task is in, for the connections it opens.
inside: ContextVar[BoundWhenUsed | None] = ContextVar("segment_seq_bounded_block", default=None)


@receiver(connection_created, dispatch_uid="segment_seq_bound_a_session_opened_in_a_bounded_block")
def bound_a_session_opened_inside(sender: object, connection: BaseDatabaseWrapper, **kwargs: object) -> None:
    """A connection opened inside a bounded block gets the block's bound too, from its first statement."""
    block = inside.get()
    if block is not None and connection.alias in block.aliases:
        block.install(connection)


@contextmanager
def session_bounds(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """bounded_session() for the app's own work on a connection nobody else uses meanwhile (a management command)."""
    with connection.cursor() as cursor, bounded_session(cursor):
        yield


def own_savepoint(connection: BaseDatabaseWrapper) -> AbstractContextManager[Any]:
    """A savepoint for the app's own short write inside its caller's open transaction, so the write's failure (a lock
    wait past LOCK_TIMEOUT) leaves that transaction whole; nothing outside one, where each statement commits."""
    return nullcontext() if connection.get_autocommit() else transaction.atomic(using=connection.alias)


def bounded_when_used(aliases: Iterable[str]) -> BoundWhenUsed:
    """LOCK_TIMEOUT for the statements the block sends on the connections of `aliases`, set when a connection sends
    its first and put back after the block: a request answered from memory sends none and pays nothing. A block
    inside another on the same connection leaves the bound to the outer one."""
    return BoundWhenUsed(aliases)
