"""Takes blocks of numbers from the Sequence table with compare-and-set, on a connection that can commit them.

Where a block is taken is asked of callers (the one home of that decision): on the caller's own
connection when it is idle in autocommit (no second connection), else on a private autocommit
connection. Only when the caller's own transaction holds the row (it created, edited or locked it;
on SQLite, holds the file's write lock) is the block taken inside that transaction: it is then
provisional, and the cache uses it only while that transaction stands. Every statement waits at most
LOCK_TIMEOUT for any lock, on any of these connections.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, Error, InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from django_segment_seq.allocator import callers
from django_segment_seq.allocator.blocks import Block, Row, next_block
from django_segment_seq.allocator.callers import Session
from django_segment_seq.allocator.connections import pool
from django_segment_seq.conf import app_settings
from django_segment_seq.db.bounded import in_savepoint, write_transaction
from django_segment_seq.db.columns import concrete_field
from django_segment_seq.db.statements import Statements, statements_for
from django_segment_seq.db.table import Sequence
from django_segment_seq.exceptions import (
    SequenceContention,
    SequenceMisconfigured,
    SequenceNotFound,
    SequenceUnavailable,
)

# Errors after which a fresh connection and another attempt may succeed.
TRANSIENT_ERRORS: tuple[type[Error], ...] = (OperationalError, InterfaceError)  # InterfaceError is no DatabaseError
# Errors that mean another transaction moved the row first: counted as lost compare-and-sets, not failures.
LOST_RACE_SQLSTATES = frozenset({"40001", "40P01"})
LOST_RACE_MYSQL_CODES = frozenset({1213, 1020})
# Errors that mean another transaction holds the row, or the table, past the lock timeout.
LOCK_TIMEOUT_SQLSTATES = frozenset({"55P03"})
LOCK_TIMEOUT_MYSQL_CODES = frozenset({1205})

__all__ = [
    "Allocation",
    "RowBusy",
    "allocate",
    "backoff",
    "create_derived_row",
    "ensure_derived_row",
    "is_lock_timeout",
]


class RowBusy(Exception):
    """Another transaction holds the row, its table, or SQLite's write lock, past the lock timeout."""

    def __init__(self, message: str, row: Row | None = None) -> None:
        super().__init__(message)
        # The row as committed when it was found locked, when known: a version that moves between two
        # such findings means others are making progress (contention), not that one holds it.
        self.row = row


class _RowMissing(Exception):
    """The row does not exist as this connection sees it, and this connection may not create it."""


@dataclass(slots=True)
class Allocation:
    """A block now owned by the caller, with the row's step and what it cost to get."""

    block: Block = Block(0, -1)  # noqa: RUF009 - a NamedTuple: immutable, safe to share
    step: int = 0
    conflicts: int = 0
    failures: int = 0
    # Attempts that found the row held by another transaction.
    busy: int = 0
    # Statements sent (reads, compare-and-sets, inserts): the database round trips this block cost.
    round_trips: int = 0
    # Taken inside the caller's transaction: it stands or falls with that transaction.
    provisional: bool = False
    # The row as read before the block was taken: its limits tell how much of the sequence is used (see events).
    row: Row | None = None
    # The row's version right after this block's compare-and-set: a give-back must find it unchanged.
    version: int | None = None


def allocate(
    alias: str,
    name: str,
    wanted: int = 1,
    *,
    prefer: int = 0,
    create: bool = True,
    background: bool = False,
) -> Allocation:
    """A block of max(step, wanted, prefer) numbers, committed before it is returned unless marked provisional.

    Lost compare-and-sets and transient database errors are retried with jittered back-off; a block
    that was committed but whose answer was lost is simply never used (a gap, not a repeat). A row
    held by another transaction is waited for at most LOCK_TIMEOUT seconds. `background` fetches use
    a private connection and never create a missing row.
    """
    settings = app_settings()
    result = Allocation()
    caller = None if background else connections[alias]
    state = Session.UNUSABLE if caller is None else callers.session(caller)
    if caller is not None and state is Session.IN_TRANSACTION and callers.known_to_hold(caller, name):
        return _inside(caller, alias, name, wanted, settings, result)
    # In a transaction that may hold the row: a row busy or missing on a private connection is asked
    # of the caller's transaction before it is waited for or inserted.
    ask_caller = caller is not None and state is Session.IN_TRANSACTION
    use_caller = state is Session.IDLE
    deadline = time.monotonic() + settings["LOCK_TIMEOUT"]
    held_version: int | None = None
    while True:
        try:
            with _connection(alias, caller if use_caller else None) as connection:
                _compare_and_set(
                    connection, alias, name, wanted, settings, result, prefer, create and not ask_caller, use_caller
                )
            return result
        except _RowMissing:
            if not create:
                raise SequenceNotFound(name, alias) from None
            if caller is not None and ask_caller and callers.holds_row(caller, name):
                held = _inside_if_held(caller, alias, name, wanted, settings, result)
                if held is not None:
                    return held
            ask_caller = False  # not the caller's: created on a connection whose lock waits are bounded
        except RowBusy as exc:
            result.busy += 1
            if caller is not None and ask_caller and callers.holds_row(caller, name):
                held = _inside_if_held(caller, alias, name, wanted, settings, result)
                if held is not None:
                    return held
            # Another transaction holds it: wait for that one, within the bound. The bound restarts while
            # the row keeps moving: short holds by one process after another are contention, which
            # MAX_RETRIES bounds.
            if exc.row is not None and exc.row.version != held_version:
                held_version = exc.row.version
                deadline = time.monotonic() + settings["LOCK_TIMEOUT"]
                if result.busy > settings["MAX_RETRIES"]:
                    raise SequenceContention(name, result.busy) from exc
            elif time.monotonic() >= deadline:
                raise SequenceUnavailable(
                    name,
                    alias,
                    result.busy,
                    RowBusy(
                        f"the row or its table was held by another transaction for over {settings['LOCK_TIMEOUT']} s"
                    ),
                ) from exc
            backoff(result.busy, settings["MAX_BACKOFF"])
        except TRANSIENT_ERRORS as exc:
            result.failures += 1
            if result.failures > settings["CONNECTION_RETRIES"]:
                raise SequenceUnavailable(name, alias, result.failures, exc) from exc
            use_caller = _use_caller_next(caller, use_caller)
            backoff(result.failures, settings["MAX_BACKOFF"])


def _use_caller_next(caller: BaseDatabaseWrapper | None, used_caller: bool) -> bool:
    """After a transient failure, which connection to try next.

    The caller's connection failed: Django recycles it, a private one takes over. A private one
    failed (the server refused another connection, say): the caller's own serves if it is idle.
    """
    return not used_caller and caller is not None and callers.session(caller) is Session.IDLE


@contextmanager
def _connection(alias: str, caller: BaseDatabaseWrapper | None) -> Iterator[BaseDatabaseWrapper]:
    if caller is not None:
        yield caller
    else:
        with pool.borrow(alias) as connection:
            yield connection


def _inside(
    caller: BaseDatabaseWrapper, alias: str, name: str, wanted: int, settings: dict[str, Any], result: Allocation
) -> Allocation:
    """A block inside the caller's transaction, known to hold the row; a failure there is a named error."""
    try:
        return _in_caller_transaction(caller, alias, name, wanted, settings, result)
    except (RowBusy, OperationalError, InterfaceError) as exc:
        raise SequenceUnavailable(name, alias, result.busy + 1, exc) from exc


def _inside_if_held(
    caller: BaseDatabaseWrapper, alias: str, name: str, wanted: int, settings: dict[str, Any], result: Allocation
) -> Allocation | None:
    """A block inside the caller's transaction; None if the row turned out not to be the caller's after all."""
    try:
        return _in_caller_transaction(caller, alias, name, wanted, settings, result)
    except (RowBusy, OperationalError, InterfaceError):
        return None  # held elsewhere after all, or the caller's connection is gone: a private one goes on


def _in_caller_transaction(
    caller: BaseDatabaseWrapper, alias: str, name: str, wanted: int, settings: dict[str, Any], result: Allocation
) -> Allocation:
    """A block taken inside the caller's transaction, which holds the row: it commits or rolls back with it.

    A savepoint keeps an error here from breaking the caller's transaction. RowBusy if another
    transaction holds the row after all.
    """
    sql = statements_for(caller, settings["LOCK_TIMEOUT"])
    try:
        with in_savepoint(caller, settings["LOCK_TIMEOUT"]) as cursor:
            if sql.take_write_lock is not None:
                result.round_trips += 1
                cursor.execute(sql.take_write_lock, [name])
            row = _read_unless_locked(cursor, sql, name, result)
            if row is None:
                if caller.vendor != "sqlite":
                    raise _RowMissing  # nobody else can hold it, and the caller did not create it
                result.round_trips += 1
                _create_row(caller, cursor, sql.insert_if_missing, alias, name, settings)
                row = _read_row(cursor, sql.select_row, name)
                if row is None:  # pragma: no cover - the insert above either created it or found it
                    raise SequenceNotFound(name, alias)
            block = next_block(name, row, wanted)
            result.round_trips += 1
            now = caller.ops.adapt_datetimefield_value(timezone.now())
            cursor.execute(sql.compare_and_set_locked, [block.last, now, name, row.value, row.version])
            if cursor.rowcount != 1:  # pragma: no cover - the row is locked by this transaction
                raise RowBusy("the row moved while this transaction held it")
    except _RowMissing:
        raise RowBusy("the row is not the caller's") from None
    except DatabaseError as exc:
        if is_lock_timeout(exc) or _lost_race(exc):
            # Held elsewhere, or moved after this transaction's snapshot: either way not the caller's row.
            raise RowBusy(str(exc)) from exc
        raise
    callers.remember(caller, name)
    result.block, result.step, result.provisional = block, row.step, True
    result.row = row
    result.version = row.version + 1
    return result


def _compare_and_set(
    connection: BaseDatabaseWrapper,
    alias: str,
    name: str,
    wanted: int,
    settings: dict[str, Any],
    result: Allocation,
    prefer: int,
    create: bool,
    on_caller: bool,
) -> None:
    sql = statements_for(connection, settings["LOCK_TIMEOUT"])
    try:
        with connection.cursor() as cursor, write_transaction(cursor, sql, callers=on_caller):
            while True:
                try:
                    row = _read_unless_locked(cursor, sql, name, result)
                except DatabaseError as exc:
                    # A locking read under a REPEATABLE READ or SERIALIZABLE server default can lose too.
                    if not _lost_race(exc):
                        raise
                    _lost(result, name, settings)
                    continue
                if row is None:
                    if not create:
                        raise _RowMissing
                    result.round_trips += 1
                    _create_row(connection, cursor, sql.insert_if_missing, alias, name, settings)
                    continue
                block = next_block(name, row, wanted, prefer)
                now = connection.ops.adapt_datetimefield_value(timezone.now())
                result.round_trips += 1
                if _try_compare_and_set(cursor, sql.compare_and_set, [block.last, now, name, row.value, row.version]):
                    break
                _lost(result, name, settings)
    except DatabaseError as exc:
        if is_lock_timeout(exc):
            raise RowBusy(str(exc)) from exc
        raise
    if not callers.committed(connection):
        if callers.session(connection) is Session.UNUSABLE:
            # The session died after the last statement: whether the block committed is unknown, so it is
            # never handed out (a gap at worst), and the attempt is retried on another connection.
            raise OperationalError(f"the connection to database {alias!r} was lost before the allocation was known")
        # Autocommit was turned off on the session behind Django's back (an init_command, a server
        # default): the block would vanish with the session, so it is never handed out.
        connection.connection.rollback()
        raise SequenceMisconfigured(
            name,
            f"the connection to database {alias!r} left the allocation uncommitted: its session does not "
            "run in autocommit (check OPTIONS such as init_command, and the server's autocommit default)",
        )
    result.block, result.step, result.version = block, row.step, row.version + 1
    result.row = row


def _lost(result: Allocation, name: str, settings: dict[str, Any]) -> None:
    """Count a lost race and back off, or give up after MAX_RETRIES."""
    result.conflicts += 1
    if result.conflicts > settings["MAX_RETRIES"]:
        raise SequenceContention(name, result.conflicts)
    backoff(result.conflicts, settings["MAX_BACKOFF"])


def _read_unless_locked(cursor: Any, sql: Statements, name: str, result: Allocation) -> Row | None:
    """The row, None if it does not exist; RowBusy if another transaction holds it."""
    result.round_trips += 1
    row = _read_row(cursor, sql.select_row_unless_locked, name)
    if row is None and sql.select_row_unless_locked != sql.select_row:
        result.round_trips += 1
        committed = _read_row(cursor, sql.select_row, name)
        if committed is not None:
            raise RowBusy("the row is locked by another transaction", committed)
    return row


def _try_compare_and_set(cursor: Any, compare_and_set: str, params: list[Any]) -> bool:
    """True if the UPDATE moved the row; a serialization failure or deadlock is a lost race like a miss."""
    try:
        cursor.execute(compare_and_set, params)
    except DatabaseError as exc:
        if not _lost_race(exc):
            raise
        return False
    return bool(cursor.rowcount == 1)


def _driver_code(exc: DatabaseError) -> tuple[str | None, int | None]:
    cause = exc.__cause__
    args = getattr(cause, "args", ())
    return getattr(cause, "sqlstate", None), (args[0] if args and isinstance(args[0], int) else None)


def _lost_race(exc: DatabaseError) -> bool:
    """PostgreSQL 40001/40P01 (a server default of REPEATABLE READ or SERIALIZABLE), MySQL 1213/1020."""
    sqlstate, code = _driver_code(exc)
    return sqlstate in LOST_RACE_SQLSTATES or code in LOST_RACE_MYSQL_CODES


def is_lock_timeout(exc: DatabaseError, *, sqlite_too: bool = False) -> bool:
    """PostgreSQL 55P03 (lock_timeout), MySQL 1205; with `sqlite_too`, SQLite's "database is locked".

    SQLite's error is about the file's one write lock, which every writer contends for: for an
    allocation it is a transient failure, retried within CONNECTION_RETRIES, not a row held elsewhere.
    """
    sqlstate, code = _driver_code(exc)
    if sqlstate in LOCK_TIMEOUT_SQLSTATES or code in LOCK_TIMEOUT_MYSQL_CODES:
        return True
    return sqlite_too and isinstance(exc, OperationalError) and "database is locked" in str(exc)


def _read_row(cursor: Any, select_row: str, name: str) -> Row | None:
    cursor.execute(select_row, [name])
    found = cursor.fetchone()
    if found is None:
        return None
    value, step, min_value, max_value, cycle, version = found
    return Row(int(value), int(step), int(min_value), int(max_value), bool(cycle), int(version))


def _create_row(
    connection: BaseDatabaseWrapper,
    cursor: Any,
    insert: str,
    alias: str,
    name: str,
    settings: dict[str, Any],
    *,
    template: Row | None = None,
    base_name: str | None = None,
    period: str | None = None,
) -> None:
    row = template or _new_row(alias, name, settings)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    cursor.execute(
        insert, [name, row.value, row.step, row.min_value, row.max_value, row.cycle, now, now, base_name, period]
    )


def _new_row(alias: str, name: str, settings: dict[str, Any]) -> Row:
    """The row a sequence gets on first use (the model's defaults, DEFAULT_STEP), if CREATE_ON_FIRST_USE allows it."""

    if not settings["CREATE_ON_FIRST_USE"]:
        raise SequenceNotFound(name, alias)
    min_value = concrete_field(Sequence, "min_value").default
    max_value = concrete_field(Sequence, "max_value").default
    return Row(min_value - 1, settings["DEFAULT_STEP"], min_value, max_value, False, 0)


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
    create_base: bool = True,
    on_caller: bool = False,
) -> None:
    """Create row `name` if missing, from `base_name`'s step and limits (per CREATE_ON_FIRST_USE) or the defaults.

    Its max_value is lowered to `cap`. Creation is INSERT-if-missing, so many processes may race here
    and all but one quietly find the row there. An existing row is left as it is. Without
    `create_base`, a missing base row is _RowMissing: it may be the caller's uncommitted one.
    """
    settings = app_settings()
    sql = statements_for(connection, settings["LOCK_TIMEOUT"])
    try:
        with connection.cursor() as cursor, write_transaction(cursor, sql, callers=on_caller):
            _create_derived_row(
                connection,
                cursor,
                alias,
                name,
                settings,
                base_name=base_name,
                period=period,
                cap=cap,
                create_base=create_base,
            )
    except DatabaseError as exc:
        if is_lock_timeout(exc, sqlite_too=True):
            raise RowBusy(str(exc)) from exc
        raise


def _create_derived_row(
    connection: BaseDatabaseWrapper,
    cursor: Any,
    alias: str,
    name: str,
    settings: dict[str, Any],
    *,
    base_name: str | None,
    period: str | None,
    cap: int | None,
    create_base: bool = True,
) -> None:
    sql = statements_for(connection, settings["LOCK_TIMEOUT"])
    if _read_row(cursor, sql.select_row, name) is not None:
        return
    template: Row | None
    if base_name is None:
        template = _new_row(alias, name, settings)
    else:
        template = _read_row(cursor, sql.select_row, base_name)
        if template is None:
            if not create_base:
                raise _RowMissing
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
    row = Row(template.min_value - 1, step, template.min_value, max_value, template.cycle, 0)
    _create_row(
        connection,
        cursor,
        sql.insert_if_missing,
        alias,
        name,
        settings,
        template=row,
        base_name=base_name,
        period=period,
    )


def ensure_derived_row(
    alias: str,
    name: str,
    *,
    base_name: str | None = None,
    period: str | None = None,
    cap: int | None = None,
) -> bool:
    """Make sure row `name` exists; True once it is known to be committed.

    It is created where callers.session() says an allocation runs: on the caller's idle connection or
    a private one. When the caller's transaction holds the base row (or the row, or SQLite's write
    lock), another connection would wait for it: the row is then created inside that transaction,
    and False is returned, since it is gone again if that transaction rolls back.
    """
    settings = app_settings()
    caller = connections[alias]
    state = callers.session(caller)
    rows = [name] if base_name is None else [base_name, name]
    if state is Session.IN_TRANSACTION and any(callers.known_to_hold(caller, row) for row in rows):
        _create_inside(caller, alias, name, settings, base_name=base_name, period=period, cap=cap)
        return False
    ask_caller = state is Session.IN_TRANSACTION
    use_caller = state is Session.IDLE
    failures = 0
    while True:
        try:
            with _connection(alias, caller if use_caller else None) as connection:
                create_derived_row(
                    connection,
                    alias,
                    name,
                    base_name=base_name,
                    period=period,
                    cap=cap,
                    create_base=not ask_caller,
                    on_caller=use_caller,
                )
            return True
        except (_RowMissing, RowBusy) as exc:
            # A base row the committed table lacks, or a row held: the caller's own, or another's
            # (a table lock held elsewhere makes the question fail at once: no).
            if ask_caller and any(callers.holds_row(caller, row) for row in rows):
                _create_inside(caller, alias, name, settings, base_name=base_name, period=period, cap=cap)
                return False
            if isinstance(exc, RowBusy):
                raise SequenceUnavailable(name, alias, 1, exc) from exc
            ask_caller = False
        except TRANSIENT_ERRORS as exc:
            failures += 1
            if failures > settings["CONNECTION_RETRIES"]:
                raise SequenceUnavailable(name, alias, failures, exc) from exc
            use_caller = _use_caller_next(caller, use_caller)
            backoff(failures, settings["MAX_BACKOFF"])


def _create_inside(
    caller: BaseDatabaseWrapper,
    alias: str,
    name: str,
    settings: dict[str, Any],
    *,
    base_name: str | None,
    period: str | None,
    cap: int | None,
) -> None:
    """Create the row inside the caller's transaction, which holds what another connection would wait for."""
    sql = statements_for(caller, settings["LOCK_TIMEOUT"])
    try:
        with in_savepoint(caller, settings["LOCK_TIMEOUT"]) as cursor:
            if sql.take_write_lock is not None:
                # Write before reading, so the caller's transaction waits for the lock instead of deadlocking on it.
                cursor.execute(sql.take_write_lock, [name])
            _create_derived_row(caller, cursor, alias, name, settings, base_name=base_name, period=period, cap=cap)
    except DatabaseError as exc:
        if is_lock_timeout(exc, sqlite_too=True):
            raise SequenceUnavailable(name, alias, 1, RowBusy(str(exc))) from exc
        raise
    except TRANSIENT_ERRORS as exc:
        raise SequenceUnavailable(name, alias, 1, exc) from exc
    callers.remember(caller, name)
