"""One attempt at an allocation or a row creation: the connection it runs on, what its failure means (by the
database's own error codes), and how long to wait before the next."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError, Error, InterfaceError, OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.allocator import callers
from django_segment_seq.allocator.blocks import Row
from django_segment_seq.allocator.callers import Session
from django_segment_seq.allocator.connections import pool, servers_of
from django_segment_seq.db.driver_errors import driver_code

# Errors after which a fresh connection and another attempt may succeed.
TRANSIENT_ERRORS: tuple[type[Error], ...] = (OperationalError, InterfaceError)  # InterfaceError is no DatabaseError
# Errors that mean another transaction moved the row first: counted as lost compare-and-sets, not failures.
LOST_RACE_SQLSTATES = frozenset({"40001", "40P01"})
LOST_RACE_MYSQL_CODES = frozenset({1213, 1020})
# Errors that mean another transaction holds the row, or the table, past the lock timeout.
LOCK_TIMEOUT_SQLSTATES = frozenset({"55P03"})
LOCK_TIMEOUT_MYSQL_CODES = frozenset({1205})


class RowBusy(Exception):
    """Another transaction holds the row, its table, or SQLite's write lock, past the lock timeout."""

    def __init__(self, message: str, row: Row | None = None, found_at: float | None = None) -> None:
        super().__init__(message)
        # The row as committed when it was found locked, when known: a version that moves between two
        # such findings means others are making progress (contention), not that one holds it.
        self.row = row
        # When the read that found it locked was sent (time.monotonic()): a hold is waited for from then, however
        # long the lost races of the same attempt before it took.
        self.found_at = found_at


class RowMissing(Exception):
    """The row does not exist as this connection sees it, and this connection may not create it."""


def is_lost_race(exc: DatabaseError) -> bool:
    """PostgreSQL 40001/40P01 (a server default of REPEATABLE READ or SERIALIZABLE), MySQL 1213/1020."""
    sqlstate, code = driver_code(exc)
    return sqlstate in LOST_RACE_SQLSTATES or code in LOST_RACE_MYSQL_CODES


def is_lock_timeout(exc: DatabaseError, *, sqlite_too: bool = False) -> bool:
    """PostgreSQL 55P03 (lock_timeout), MySQL 1205; with `sqlite_too`, SQLite's "database is locked".

    SQLite's error is about the file's one write lock, which every writer contends for: for an
    allocation it is a transient failure, retried within CONNECTION_RETRIES, not a row held elsewhere.
    """
    sqlstate, code = driver_code(exc)
    if sqlstate in LOCK_TIMEOUT_SQLSTATES or code in LOCK_TIMEOUT_MYSQL_CODES:
        return True
    return sqlite_too and isinstance(exc, OperationalError) and "database is locked" in str(exc)


def backoff(attempt: int, ceiling: float) -> None:
    """Sleep a random time that grows with the attempt, so contenders spread out instead of colliding again."""
    time.sleep(random.uniform(0, min(ceiling, 0.001 * 2 ** min(attempt, 12))))


def caller_carries(caller: BaseDatabaseWrapper, state: Session) -> bool:
    """Whether an attempt may run on the caller's own connection, found in `state`.

    Only when it is idle in autocommit, and never when SERVERS lists the alias's servers: the caller's
    connection knows one of them, which may be the one that is down or not ready.
    """
    return state is Session.IDLE and not servers_of(caller.alias)


def use_caller_next(caller: BaseDatabaseWrapper | None, used_caller: bool) -> bool:
    """After a transient failure, whether the next attempt runs on the caller's own connection.

    The caller's connection failed: Django recycles it, a private one takes over. A private one
    failed (the server refused another connection, say): the caller's own serves if it is idle.
    """
    return not used_caller and caller is not None and caller_carries(caller, callers.session(caller))


@contextmanager
def attempt_on(
    alias: str, caller: BaseDatabaseWrapper | None, deadline: float | None = None
) -> Iterator[BaseDatabaseWrapper]:
    """The caller's own connection when given, else a private one borrowed for the attempt (opened on the servers of
    SERVERS until `deadline` at the latest)."""
    if caller is not None:
        yield caller
    else:
        with pool.borrow(alias, deadline) as connection:
            yield connection
