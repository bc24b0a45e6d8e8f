"""Takes blocks of numbers from the Sequence table with compare-and-set, retried on conflict and on lost connections."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from .conf import app_settings
from .dbconn import pool
from .exceptions import SequenceContention, SequenceMisconfigured, SequenceNotFound, SequenceUnavailable
from .ranges import Block, Row, next_block
from .statements import SQLITE_GET_BUSY_TIMEOUT, SQLITE_SET_BUSY_TIMEOUT, flow_statements_for, statements_for

# How long a private connection waits for SQLite's write lock before concluding that the caller's own
# transaction holds it.
SQLITE_LOCK_WAIT = 0.1

# Errors after which a fresh connection and another attempt may succeed.
TRANSIENT_ERRORS: tuple[type[DatabaseError], ...] = (OperationalError, InterfaceError)
# Errors that mean another transaction moved the row first: counted as lost compare-and-sets, not failures.
LOST_RACE_SQLSTATES = frozenset({"40001", "40P01"})
LOST_RACE_MYSQL_CODES = frozenset({1213, 1020})


@dataclass(slots=True)
class Allocation:
    """A block now owned by the caller, with the row's step and what it cost to get."""

    block: Block = Block(0, -1)
    step: int = 0
    conflicts: int = 0
    failures: int = 0
    # Statements sent (reads, compare-and-sets, inserts): the database round trips this block cost.
    round_trips: int = 0


def allocate(
    alias: str,
    name: str,
    wanted: int = 1,
    *,
    prefer: int = 0,
    create: bool = True,
    sqlite_lock_wait: float | None = None,
) -> Allocation:
    """A block of max(step, wanted, prefer) numbers, committed on a private connection before it is returned.

    Lost compare-and-sets and transient database errors are retried with jittered back-off; a
    block that was committed but whose answer was lost is simply never used (a gap, not a repeat).
    With `sqlite_lock_wait`, SQLite's lock is waited for that many seconds once, without retries.
    `create=False` never creates a missing row (background fetches leave that to callers).
    """
    settings = app_settings()
    retries = settings["CONNECTION_RETRIES"] if sqlite_lock_wait is None else 0
    result = Allocation()
    while True:
        try:
            with pool.borrow(alias) as connection:
                if sqlite_lock_wait is None:
                    _compare_and_set(connection, alias, name, wanted, settings, result, prefer, create)
                else:
                    with _sqlite_busy_timeout(connection, sqlite_lock_wait):
                        _compare_and_set(connection, alias, name, wanted, settings, result, prefer, create)
                return result
        except TRANSIENT_ERRORS as exc:
            result.failures += 1
            if result.failures > retries:
                raise SequenceUnavailable(name, alias, result.failures, exc) from exc
            backoff(result.failures, settings["MAX_BACKOFF"])


@contextmanager
def _sqlite_busy_timeout(connection: BaseDatabaseWrapper, seconds: float) -> Iterator[None]:
    with connection.cursor() as cursor:
        cursor.execute(SQLITE_GET_BUSY_TIMEOUT)
        (previous,) = cursor.fetchone()
        cursor.execute(SQLITE_SET_BUSY_TIMEOUT.format(milliseconds=int(seconds * 1000)))
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(SQLITE_SET_BUSY_TIMEOUT.format(milliseconds=int(previous)))


def allocate_in_transaction(connection: BaseDatabaseWrapper, alias: str, name: str, wanted: int = 1) -> Allocation:
    """A block taken inside the caller's own (SQLite) transaction: it commits or rolls back with it."""
    settings = app_settings()
    with connection.cursor() as cursor:
        cursor.execute(statements_for(connection).take_write_lock, [name])
    result = Allocation(round_trips=1)
    _compare_and_set(connection, alias, name, wanted, settings, result)
    return result


def _compare_and_set(
    connection: BaseDatabaseWrapper,
    alias: str,
    name: str,
    wanted: int,
    settings: dict[str, Any],
    result: Allocation,
    prefer: int = 0,
    create: bool = True,
) -> None:
    sql = statements_for(connection)
    with connection.cursor() as cursor:
        while True:
            result.round_trips += 1
            row = _read_row(cursor, sql.select_row, name)
            if row is None:
                if not create:
                    raise SequenceNotFound(name, alias)
                result.round_trips += 1
                _create_row(connection, cursor, sql.insert_if_missing, alias, name, settings)
                continue
            block = next_block(name, row, wanted, prefer)
            now = connection.ops.adapt_datetimefield_value(timezone.now())
            result.round_trips += 1
            if _try_compare_and_set(cursor, sql.compare_and_set, [block.last, now, name, row.value]):
                result.block, result.step = block, row.step
                return
            result.conflicts += 1
            if result.conflicts > settings["MAX_RETRIES"]:
                raise SequenceContention(name, result.conflicts)
            backoff(result.conflicts, settings["MAX_BACKOFF"])


def _try_compare_and_set(cursor: Any, compare_and_set: str, params: list[Any]) -> bool:
    """True if the UPDATE moved the row; a serialization failure or deadlock is a lost race like a miss."""
    try:
        cursor.execute(compare_and_set, params)
    except DatabaseError as exc:
        if not _lost_race(exc):
            raise
        return False
    return cursor.rowcount == 1


def _lost_race(exc: DatabaseError) -> bool:
    """PostgreSQL 40001/40P01 (a server default of REPEATABLE READ or SERIALIZABLE), MySQL 1213/1020."""
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) in LOST_RACE_SQLSTATES:
        return True
    args = getattr(cause, "args", ())
    return bool(args) and args[0] in LOST_RACE_MYSQL_CODES


def _read_row(cursor: Any, select_row: str, name: str) -> Row | None:
    cursor.execute(select_row, [name])
    found = cursor.fetchone()
    if found is None:
        return None
    value, step, min_value, max_value, cycle = found
    return Row(int(value), int(step), int(min_value), int(max_value), bool(cycle))


def _create_row(
    connection: BaseDatabaseWrapper, cursor: Any, insert: str, alias: str, name: str, settings: dict[str, Any]
) -> None:
    row = _new_row(alias, name, settings)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    cursor.execute(insert, [name, *row, now, now])


def _new_row(alias: str, name: str, settings: dict[str, Any]) -> Row:
    """The row a sequence gets on first use (the model's defaults, DEFAULT_STEP), if CREATE_ON_FIRST_USE allows it."""
    from .models import Sequence

    if not settings["CREATE_ON_FIRST_USE"]:
        raise SequenceNotFound(name, alias)
    field = Sequence._meta.get_field
    min_value = field("min_value").default
    return Row(min_value - 1, settings["DEFAULT_STEP"], min_value, field("max_value").default, False)


def backoff(attempt: int, ceiling: float) -> None:
    """Sleep a random time that grows with the attempt, so contenders spread out instead of colliding again."""
    time.sleep(random.uniform(0, min(ceiling, 0.001 * 2 ** min(attempt, 12))))


# Flow numbers: rows derived from a base sequence (one per period) or capped by a format's width.


def create_derived_row(
    connection: BaseDatabaseWrapper,
    alias: str,
    name: str,
    *,
    base_name: str | None = None,
    period: str | None = None,
    cap: int | None = None,
) -> None:
    """Create row `name` if missing, from `base_name`'s step and limits (created per CREATE_ON_FIRST_USE) or the defaults.

    Its max_value is lowered to `cap`. Creation is INSERT-if-missing, so many processes may race here
    and all but one quietly find the row there. An existing row is left as it is.
    """
    settings = app_settings()
    sql = statements_for(connection)
    with connection.cursor() as cursor:
        if _read_row(cursor, sql.select_row, name) is not None:
            return
        if base_name is None:
            template = _new_row(alias, name, settings)
        else:
            template = _read_row(cursor, sql.select_row, base_name)
            if template is None:
                _create_row(connection, cursor, sql.insert_if_missing, alias, base_name, settings)
                template = _read_row(cursor, sql.select_row, base_name)
                if template is None:  # pragma: no cover - the insert above either created it or found it
                    raise SequenceNotFound(base_name, alias)
        max_value = template.max_value if cap is None else min(template.max_value, cap)
        if max_value < template.min_value:
            raise SequenceMisconfigured(
                name, f"its format holds numbers up to {cap}, below the sequence's min_value {template.min_value}"
            )
        step = min(template.step, max_value - template.min_value + 1)
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        cursor.execute(
            flow_statements_for(connection).insert_derived_if_missing,
            [name, template.min_value - 1, step, template.min_value, max_value, template.cycle, now, now, base_name, period],
        )


def ensure_derived_row(
    alias: str,
    name: str,
    *,
    base_name: str | None = None,
    period: str | None = None,
    cap: int | None = None,
    caller: BaseDatabaseWrapper | None = None,
) -> bool:
    """Make sure row `name` exists, creating it on a private connection; True once it is known to be committed.

    With `caller` (a SQLite connection inside a transaction that may hold the only write lock), the
    private connection waits briefly, then the row is created inside the caller's transaction and
    False is returned: it is gone again if that transaction rolls back.
    """
    try:
        with pool.borrow(alias) as connection:
            if caller is None:
                create_derived_row(connection, alias, name, base_name=base_name, period=period, cap=cap)
            else:
                with _sqlite_busy_timeout(connection, SQLITE_LOCK_WAIT):
                    create_derived_row(connection, alias, name, base_name=base_name, period=period, cap=cap)
        return True
    except TRANSIENT_ERRORS:
        if caller is None:
            raise
    # Write before reading, so the caller's transaction waits for the lock instead of deadlocking on it.
    with caller.cursor() as cursor:
        cursor.execute(statements_for(caller).take_write_lock, [name])
    create_derived_row(caller, alias, name, base_name=base_name, period=period, cap=cap)
    return False
