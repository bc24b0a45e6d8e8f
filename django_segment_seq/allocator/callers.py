"""The one home of the question every allocation asks: commit on its own, or inside the caller's transaction?

It is answered from what the database session says, never from what the app guessed:

- `session(connection)`: the caller's connection is IDLE (autocommit, no transaction open, so an
  allocation may run on it and commits at once), IN_TRANSACTION (atomic(), AUTOCOMMIT off, or a raw
  BEGIN: an allocation commits on a private connection), or UNUSABLE (closed, broken, of another
  process after fork(), or its transaction failed: it is never queried).
- `holds_row(connection, name)`: whether the open transaction holds the Sequence row `name`, which
  any other connection would wait for; only then is a block taken inside that transaction.
  PostgreSQL answers from the row's xmin/xmax and the session's transaction ids; MariaDB from
  whether the caller sees a row the committed table lacks (it created it) and from InnoDB's own
  record of who a waiter waits for; SQLite from the one write lock of the file.

A yes is remembered for the rest of an atomic() block (an on_commit hook that is still queued
proves that the block's writes stand); nothing else is remembered.
"""

from __future__ import annotations

import logging
import os
import select
import time
import uuid
from contextlib import suppress
from enum import Enum
from typing import Any

from django.db import DatabaseError, Error, InterfaceError, OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.dispatch import receiver

from django_segment_seq.allocator.connections import pool
from django_segment_seq.allocator.memory import Held, TransactionMemory
from django_segment_seq.conf import app_settings
from django_segment_seq.db import postgres_driver, sqlite
from django_segment_seq.db.bounded import in_savepoint
from django_segment_seq.db.driver_errors import mysql_code
from django_segment_seq.db.statements import (
    MYSQL_BLOCKERS_OF,
    MYSQL_IN_TRANSACTION,
    MYSQL_KILL_QUERY,
    PG_BLOCKERS_OF,
    PG_CANCEL_BACKEND,
    statements_for,
)

logger = logging.getLogger("django_segment_seq")

# Set on every connection wrapper when it connects: a wrapper inherited through fork() belongs to the parent.
_OPENED_IN = "_segment_seq_opened_in"

# MariaDB: how long the caller's connection looks for a private connection's wait to appear in InnoDB's
# lock tables (the waiter itself gives up after one second); how long a waiter that gets the row at
# once takes to say so; and the interval between two reads of the lock tables.
PROBE_SECONDS = 0.6
FIRST_ANSWER_SECONDS = 0.02
LOCK_TABLES_REFRESH = 0.12
# MySQL error numbers: access denied for lack of a privilege (PROCESS, for InnoDB's lock tables).
_MYSQL_NO_PRIVILEGE = frozenset({1227, 1142, 1044})

# PostgreSQL: the longest a question about a row waits for a lock. The caller's own locks never make
# it wait, so a wait means another transaction holds the table, and the answer is no.
PROBE_LOCK_TIMEOUT = 0.2

# Rows the caller's current atomic() block is known to hold, per connection and name.
_held = TransactionMemory()


class Session(Enum):
    """What a caller's connection is at this moment, as far as an allocation is concerned."""

    IDLE = "idle"
    IN_TRANSACTION = "in transaction"
    UNUSABLE = "unusable"


@receiver(connection_created)
def _note_process(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    setattr(connection, _OPENED_IN, os.getpid())


def session(connection: BaseDatabaseWrapper) -> Session:
    """Whether `connection` is idle in autocommit, inside a transaction, or not to be used at all."""
    raw = connection.connection
    if raw is None:
        # Not connected: Django connects in the project's AUTOCOMMIT mode, and with it off, every
        # statement would open a transaction that the project, not the app, commits.
        return Session.IDLE if connection.settings_dict.get("AUTOCOMMIT", True) else Session.IN_TRANSACTION
    if getattr(connection, _OPENED_IN, None) != os.getpid():
        return Session.UNUSABLE  # inherited through fork(): its session belongs to the parent
    if connection.in_atomic_block and connection.needs_rollback:
        return Session.UNUSABLE  # Django refuses every query until the block ends
    vendor = connection.vendor
    if vendor == "postgresql":
        status = postgres_driver.transaction_status(raw)
        if status in (postgres_driver.UNKNOWN, postgres_driver.IN_ERROR):
            return Session.UNUSABLE  # closed or broken (a failover, a terminated backend), or a failed transaction
    # Django's own transaction, begun or about to begin with the next statement (psycopg sends BEGIN then).
    if connection.in_atomic_block or not connection.get_autocommit():
        return Session.IN_TRANSACTION
    if vendor == "postgresql":
        return Session.IDLE if status == postgres_driver.IDLE else Session.IN_TRANSACTION
    if vendor == "sqlite":
        return Session.IN_TRANSACTION if raw.in_transaction else Session.IDLE
    # MariaDB: Django's autocommit flag stays true after a raw BEGIN; only the server knows.
    try:
        with connection.cursor() as cursor:
            cursor.execute(MYSQL_IN_TRANSACTION)
            open_ = cursor.fetchone()[0]
    except (DatabaseError, InterfaceError):
        return Session.UNUSABLE
    return Session.IN_TRANSACTION if open_ else Session.IDLE


def known_to_hold(connection: BaseDatabaseWrapper, name: str) -> bool:
    """What is known without asking the server: SQLite's write lock, or a row remembered in this atomic() block."""
    if connection.vendor == "sqlite":
        return sqlite.holds_write_lock(connection)
    return _held.get(connection, name) is not None


def holds_row(connection: BaseDatabaseWrapper, name: str) -> bool:
    """Whether the caller's open transaction on `connection` holds row `name`; asks the server if not known.

    Any error asking (a connection lost meanwhile) is a no: the allocation then commits privately.
    """
    if known_to_hold(connection, name):
        return True
    if connection.vendor == "sqlite" or session(connection) is not Session.IN_TRANSACTION:
        return False
    try:
        held = _mysql_holds(connection, name) if connection.vendor == "mysql" else _postgresql_holds(connection, name)
    except (Error, InterfaceError):
        return False
    if held:
        remember(connection, name)
    return held


def remember(connection: BaseDatabaseWrapper, name: str) -> None:
    """Row `name` is held by the caller's transaction (it was created or taken there) until that transaction ends."""
    if connection.vendor != "sqlite" and _held.get(connection, name) is None:
        _held.keep(connection, connection.alias, name, Held())


def forget() -> None:
    """Forget every remembered row (tests that clear the table)."""
    _held.clear()


def committed(connection: BaseDatabaseWrapper) -> bool:
    """Whether what was just sent on a connection believed to be in autocommit is committed.

    Asked of the driver, not of Django's flag, so an `init_command` or server default that turned
    autocommit off on the session is caught too.
    """
    raw = connection.connection
    if connection.vendor == "sqlite":
        return not raw.in_transaction
    if connection.vendor == "postgresql":
        return postgres_driver.transaction_status(raw) == postgres_driver.IDLE
    return bool(raw.get_autocommit())  # mysqlclient reads the server's status flags


def _postgresql_holds(connection: BaseDatabaseWrapper, name: str) -> bool:
    """Created or updated by this transaction (its version's creator is in progress and visible), or locked by it.

    A lock is asked of a waiting probe, not read from the row's xmax: several lockers (a MultiXact) and one
    transaction's locks of two strengths leave there an id no transaction function can read.
    """
    sql = statements_for(connection)
    with in_savepoint(connection, min(PROBE_LOCK_TIMEOUT, app_settings()["LOCK_TIMEOUT"]), keep=False) as cursor:
        cursor.execute(sql.row_created_here, [name])
        found = cursor.fetchone()
    if found is None:
        return False
    if found[0]:
        return True
    with pool.borrow(connection.alias) as private:
        return _postgresql_blocker_is(connection, private, sql.probe_wait, name)


def _postgresql_blocker_is(caller: BaseDatabaseWrapper, private: BaseDatabaseWrapper, probe: Any, name: str) -> bool:
    """Send `private` to wait for the row, and ask PostgreSQL on the caller's connection whom it waits for.

    pg_blocking_pids() names every holder of a lock the waiter needs, each member of a MultiXact and each
    sharer. A waiter that gets the row at once shows that nobody holds it.
    """
    raw = private.connection
    waiter = postgres_driver.backend_pid(raw)
    sent = postgres_driver.send_probe(raw, probe, name)
    finished = sent.answered(FIRST_ANSWER_SECONDS)
    try:
        if finished:
            return False
        mine = postgres_driver.backend_pid(caller.connection)
        deadline = time.monotonic() + PROBE_SECONDS
        while True:
            with in_savepoint(caller, PROBE_LOCK_TIMEOUT, keep=False) as cursor:
                cursor.execute(PG_BLOCKERS_OF, [waiter])
                blockers = set(cursor.fetchone()[0] or ())
            if blockers:
                return mine in blockers
            finished = sent.answered(LOCK_TABLES_REFRESH)
            if finished or time.monotonic() >= deadline:
                return False
    finally:
        _end_pg_probe(caller, raw, sent, waiter, finished)


def _end_pg_probe(
    caller: BaseDatabaseWrapper, raw: Any, sent: postgres_driver.LockProbe, waiter: int, finished: bool
) -> None:
    """Stop the waiting statement (or collect its answer) so the private connection is idle again."""
    if not finished:
        with suppress(Error, InterfaceError), in_savepoint(caller, PROBE_LOCK_TIMEOUT, keep=False) as cursor:
            cursor.execute(PG_CANCEL_BACKEND, [waiter])
        if not sent.answered(app_settings()["LOCK_TIMEOUT"] + 1):
            raise OperationalError("a lock probe did not end")  # the pool drops the connection
    sent.collect()
    if postgres_driver.transaction_status(raw) != postgres_driver.IDLE:
        raise OperationalError("a lock probe left its session busy")  # the pool drops the connection


def _mysql_holds(connection: BaseDatabaseWrapper, name: str) -> bool:
    """A row the caller sees that the committed table lacks is its own insert; a locked row, InnoDB says whose."""

    sql = statements_for(connection)
    with connection.cursor() as cursor:
        cursor.execute(sql.probe_select_row, [name])
        seen = cursor.fetchone() is not None
    with pool.borrow(connection.alias) as private:
        with private.cursor() as cursor:
            cursor.execute(sql.select_row, [name])
            committed_row = cursor.fetchone() is not None
        if not committed_row:
            return seen  # an insert nobody committed, visible to the caller: the caller's own
        return _mysql_blocker_is(connection, private, sql.probe_wait, name)


def _mysql_blocker_is(caller: BaseDatabaseWrapper, private: BaseDatabaseWrapper, probe: Any, name: str) -> bool:
    """Send `private` to wait for the row, and ask InnoDB on the caller's connection whose lock it waits for.

    InnoDB refreshes its lock tables for readers at most every 0.1 s, and only when nobody read them in
    the last 0.1 s, so they are read at longer intervals than that. A waiter that gets the row at
    once shows that nobody holds it.
    """
    raw = private.connection
    waiter = raw.thread_id()
    token = uuid.uuid4().hex
    raw.send_query((probe % (raw.literal(name).decode(), token)).encode())
    finished = _answered(raw, FIRST_ANSWER_SECONDS)
    try:
        if finished:
            return False
        with caller.cursor() as cursor:
            deadline = time.monotonic() + PROBE_SECONDS
            while True:
                try:
                    cursor.execute(MYSQL_BLOCKERS_OF, [waiter, f"%{token}%"])
                except DatabaseError as exc:
                    if mysql_code(exc) in _MYSQL_NO_PRIVILEGE:
                        logger.warning(
                            "The database user lacks the PROCESS privilege: a Sequence row locked by the caller's "
                            "own transaction cannot be recognised on MariaDB, and numbers of it wait for that "
                            "transaction (at most LOCK_TIMEOUT)."
                        )
                        return False
                    raise
                blockers = {row[0] for row in cursor.fetchall()}
                if blockers:
                    return caller.connection.thread_id() in blockers
                finished = _answered(raw, LOCK_TABLES_REFRESH)
                if finished or time.monotonic() >= deadline:
                    return False  # the row came free (nobody holds it), or InnoDB never showed the wait
    finally:
        _end_probe(caller, raw, waiter, finished)


def _answered(raw: Any, seconds: float) -> bool:
    """Whether the statement sent on `raw` has answered within `seconds`."""
    return bool(select.select([raw.fileno()], [], [], seconds)[0])


def _end_probe(caller: BaseDatabaseWrapper, raw: Any, waiter: int, finished: bool) -> None:
    """Stop the waiting statement (or collect its answer) so the private connection is clean again."""
    if not finished:
        with suppress(Error, InterfaceError), caller.cursor() as cursor:
            cursor.execute(MYSQL_KILL_QUERY, [waiter])
    try:
        raw.read_query_result()
        result = raw.store_result()
        if result is not None:
            result.fetch_row(0)
    except Exception as exc:  # the driver's own errors: interrupted, or timed out waiting
        if mysql_code(exc) not in (1317, 1205):
            raise OperationalError(str(exc)) from exc  # the pool drops the connection
