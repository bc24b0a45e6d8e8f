"""Takes blocks of numbers from the Sequence table with compare-and-set, on a connection that can commit them.

The retry loop (retry.py) decides where each attempt runs: on the caller's own idle connection, on a
private autocommit connection, or, only when the caller's own transaction holds the row, inside that
transaction: the block is then provisional, and the cache uses it only while that transaction stands.
Every statement waits at most LOCK_TIMEOUT for any lock, on any of these connections.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from django_segment_seq.allocator import callers, seen
from django_segment_seq.allocator.attempts import RowBusy, RowMissing, backoff, is_lock_timeout, is_lost_race
from django_segment_seq.allocator.blocks import Block, Row, failover_skip, next_block, restore_skip
from django_segment_seq.allocator.callers import Session
from django_segment_seq.allocator.request import Allocation, BlockRequest
from django_segment_seq.allocator.retry import Plan, run
from django_segment_seq.allocator.rows import create_row, read_row
from django_segment_seq.conf import app_settings
from django_segment_seq.db.bounded import in_savepoint, write_transaction
from django_segment_seq.db.history import server_history, unfenced_history, with_table
from django_segment_seq.db.identity import current_identity, server_history_and_identity, table_identity
from django_segment_seq.db.standbys import StandbyUnconfirmed, confirmed_history
from django_segment_seq.db.statements import Statements, statements_for
from django_segment_seq.exceptions import (
    SequenceContention,
    SequenceMisconfigured,
    SequenceNotFound,
    SequenceUnavailable,
)

__all__ = ["allocate"]

logger = logging.getLogger("django_segment_seq")


def allocate(request: BlockRequest) -> Allocation:
    """A block of max(step, wanted, prefer) numbers, committed before it is returned unless marked provisional.

    Lost compare-and-sets and transient database errors are retried with jittered back-off; a block
    that was committed but whose answer was lost is simply never used (a gap, not a repeat). A row
    held by another transaction is waited for at most LOCK_TIMEOUT seconds. `background` fetches use
    a private connection and never create a missing row.
    """
    settings = app_settings()
    result = Allocation()
    caller = None if request.background else connections[request.alias]
    plan = Plan.begin(caller, settings, patient=True, progress=request.progress)
    run(_Taking(request, settings, result), plan)
    result.busy, result.failures = plan.busy, plan.failures
    return result


@dataclass(frozen=True, slots=True)
class _Taking:
    """One allocation as the retry loop runs it: its attempts take the block by compare-and-set into `result`."""

    request: BlockRequest
    settings: dict[str, Any]
    # Filled by the attempt that succeeds; its costs (round trips, lost races) add up over every attempt.
    result: Allocation
    # A row held elsewhere is waited for, a Galera pause and CLUSTER_LOST watched (see retry.Job).
    patient = True

    @property
    def alias(self) -> str:
        return self.request.alias

    @property
    def name(self) -> str:
        return self.request.name

    @property
    def rows(self) -> tuple[str, ...]:
        return (self.request.name,)

    @property
    def creates(self) -> bool:
        return self.request.create

    def attempt(self, connection: BaseDatabaseWrapper, plan: Plan) -> Allocation:
        """Take the next block on `connection`, outside any transaction, and make sure it committed before it is
        used; the row is created only where its lock waits are bounded (not while the caller may hold it)."""
        sql = statements_for(connection, self.settings["LOCK_TIMEOUT"])
        history = server_history_and_identity(connection)
        create = self.request.create and not plan.ask_caller
        # A caller whose transaction may hold the row is asked first (retry.run): no queueing for its own lock.
        queue = sql.compare_and_set_queues and not plan.ask_caller
        try:
            with connection.cursor() as cursor, write_transaction(cursor, sql, callers=plan.use_caller):
                row, block, table = self._take_block(connection, cursor, sql, history, create, queue)
        except DatabaseError as exc:
            if is_lock_timeout(exc):
                raise RowBusy(str(exc)) from exc
            raise
        _require_committed(connection, self.alias, self.name)
        result = self.result
        result.block, result.step, result.version = block, row.step, row.version + 1
        result.row = row
        seen.note(self.alias, self.name, row.version + 1, block.last, table)
        return result

    def inside(self, caller: BaseDatabaseWrapper, plan: Plan) -> Allocation:
        """A block inside the caller's transaction, known to hold the row; a failure there is a named error."""
        try:
            return self._take_inside(caller)
        except (RowBusy, StandbyUnconfirmed, OperationalError, InterfaceError) as exc:
            raise SequenceUnavailable(self.name, self.alias, plan.busy + 1, exc) from exc

    def inside_if_held(self, caller: BaseDatabaseWrapper, plan: Plan) -> Allocation | None:
        """A block inside the caller's transaction; None if the row turned out not to be the caller's after all."""
        try:
            return self._take_inside(caller)
        except (RowBusy, StandbyUnconfirmed, OperationalError, InterfaceError):
            return None  # held elsewhere after all, or the caller's connection is gone: a private one goes on

    def _take_inside(self, caller: BaseDatabaseWrapper) -> Allocation:
        """A block taken inside the caller's transaction, which holds the row: it commits or rolls back with it.

        A savepoint keeps an error here from breaking the caller's transaction. RowBusy if another
        transaction holds the row after all.
        """
        name, result, timeout = self.name, self.result, self.settings["LOCK_TIMEOUT"]
        sql = statements_for(caller, timeout)
        try:
            with in_savepoint(caller, timeout) as cursor:
                if sql.take_write_lock is not None:
                    result.round_trips += 1
                    cursor.execute(sql.take_write_lock, [name])
                row = self._row_inside(caller, cursor, sql)
                # Exactly the numbers asked for, no failover skip: the block commits with the caller's rows or not
                # at all, and a rest kept for later could be undone by the caller (a raw ROLLBACK TO SAVEPOINT) unseen.
                block = next_block(name, row._replace(step=1), self.request.wanted)
                now = caller.ops.adapt_datetimefield_value(timezone.now())
                current = with_table(server_history(caller), table_identity(caller, cursor, row.table))
                current, sent = confirmed_history(caller, cursor, row.history, current)
                result.round_trips += sent + 1
                history = unfenced_history(row.history, current)
                cursor.execute(sql.compare_and_set_locked, [block.last, now, history, name, row.value, row.version])
                if cursor.rowcount != 1:  # pragma: no cover - the row is locked by this transaction
                    raise RowBusy("the row moved while this transaction held it")
        except RowMissing:
            raise RowBusy("the row is not the caller's") from None
        except DatabaseError as exc:
            if is_lock_timeout(exc) or is_lost_race(exc):
                # Held elsewhere, or moved after this transaction's snapshot: either way not the caller's row.
                raise RowBusy(str(exc)) from exc
            raise
        callers.remember(caller, name)
        result.block, result.step, result.provisional = block, row.step, True
        result.row = row
        result.version = row.version + 1
        return result

    def _row_inside(self, caller: BaseDatabaseWrapper, cursor: Any, sql: Statements) -> Row:
        """The row as the caller's transaction sees it; on SQLite, whose write lock that transaction holds, made
        there if missing."""
        row = _read_unless_locked(cursor, sql, self.name, self.result)
        if row is not None:
            return row
        if caller.vendor != "sqlite":
            raise RowMissing  # nobody else can hold it, and the caller did not create it
        self.result.round_trips += 1
        create_row(caller, cursor, sql.insert_if_missing, self.alias, self.name, self.settings)
        row = read_row(cursor, sql.select_row, self.name)
        if row is None:  # pragma: no cover - the insert above either created it or found it
            raise SequenceNotFound(self.name, self.alias)
        return row

    def _take_block(
        self, connection: BaseDatabaseWrapper, cursor: Any, sql: Statements, history: str, create: bool, queue: bool
    ) -> tuple[Row, Block, str]:
        """Read the row and move it past the next block by compare-and-set, again after each lost race; the row as
        read, the block and the table's identity.

        With `queue`, a row found locked is taken at its committed version by a compare-and-set that queues for the
        lock: other processes' compare-and-sets hold it for a moment (contention, a lost race at worst), while a
        transaction holding it makes the statement reach the database's lock wait (RowBusy).
        """
        alias, name, result, settings = self.alias, self.name, self.result, self.settings
        while True:
            try:
                row = _read_unless_locked(cursor, sql, name, result)
            except RowBusy as busy:
                if not queue or busy.row is None:
                    raise
                row = busy.row
            except DatabaseError as exc:
                # A locking read under a REPEATABLE READ or SERIALIZABLE server default can lose too.
                if not is_lost_race(exc):
                    raise
                _lost(result, name, settings)
                continue
            if row is None:
                if not create:
                    raise RowMissing
                _refuse_a_table_being_restored(connection, cursor, alias, name)
                result.round_trips += 1
                create_row(connection, cursor, sql.insert_if_missing, alias, name, settings)
                continue
            table = table_identity(connection, cursor, row.table)
            current = with_table(history, table)
            skip, why = _skip(alias, name, row, current, settings["FAILOVER_SKIP"])
            block = next_block(name, row, self.request.wanted, self.request.prefer, skip)
            now = connection.ops.adapt_datetimefield_value(timezone.now())
            current, sent = confirmed_history(connection, cursor, row.history, current)
            result.round_trips += sent + 1
            params = [block.last, now, current, name, row.value, row.version]
            if _try_compare_and_set(cursor, sql.compare_and_set, params):
                if skip:
                    logger.warning(
                        "Sequence %r: %s: skipped numbers %d to %d (FAILOVER_SKIP).",
                        name, why, row.value + 1, row.value + skip,
                    )  # fmt: skip
                return row, block, table
            _lost(result, name, settings)


def _refuse_a_table_being_restored(connection: BaseDatabaseWrapper, cursor: Any, alias: str, name: str) -> None:
    """A row this process took ranges from is missing. In the same table it was deleted on purpose (a test's flush,
    a reset) and is made anew; in a table made since, a restore is loading it, and the row it brings back would meet
    a new one: waited for as a row held (RowBusy), within LOCK_TIMEOUT."""
    before = seen.last_seen(alias, name)
    if before is None:
        return
    if before.table and current_identity(connection, cursor) != before.table:
        raise RowBusy("the Sequence table was made again since this process took ranges from the row (a restore?)")
    seen.drop(alias, name)


def _require_committed(connection: BaseDatabaseWrapper, alias: str, name: str) -> None:
    """A block is handed out only once the driver says it is committed: never from a session that lost autocommit."""
    if callers.committed(connection):
        return
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


def _skip(alias: str, name: str, row: Row, current: str, skip: int) -> tuple[int, str]:
    """How many numbers the next block skips, and why: a row found behind this process's own last write was
    restored; one last written on another server history or in another table (`current` is this write's) follows
    a failover or a restore."""
    behind = seen.went_back(alias, name, row.version)
    if behind is not None:
        why = (
            f"the row is at version {row.version}, below version {behind.version} this process left it at "
            "(restored from a backup)"
        )
        return restore_skip(row, behind.highest, skip), why
    why = (
        f"its last range was taken on server history {row.history}, this one on {current} "
        "(a failover, or a restore that re-created the table, since)"
    )
    skipped = failover_skip(row, current, skip)
    before = seen.last_seen(alias, name)
    if skipped and before is not None:
        skipped = restore_skip(row, before.highest, skip)  # and past every number this process held
    return skipped, why


def _lost(result: Allocation, name: str, settings: dict[str, Any]) -> None:
    """Count a lost race and back off, or give up after MAX_RETRIES."""
    result.retries += 1
    if result.retries > settings["MAX_RETRIES"]:
        raise SequenceContention(name, result.retries)
    backoff(result.retries, settings["MAX_BACKOFF"])


def _read_unless_locked(cursor: Any, sql: Statements, name: str, result: Allocation) -> Row | None:
    """The row, None if it does not exist; RowBusy if another transaction holds it."""
    result.round_trips += 1
    sent = time.monotonic()
    row = read_row(cursor, sql.select_row_unless_locked, name)
    if row is None and sql.select_row_unless_locked != sql.select_row:
        result.round_trips += 1
        committed = read_row(cursor, sql.select_row, name)
        if committed is not None:
            raise RowBusy("the row is locked by another transaction", committed, sent)
    return row


def _try_compare_and_set(cursor: Any, compare_and_set: str, params: list[Any]) -> bool:
    """True if the UPDATE moved the row; a serialization failure or deadlock is a lost race like a miss."""
    try:
        cursor.execute(compare_and_set, params)
    except DatabaseError as exc:
        if not is_lost_race(exc):
            raise
        return False
    return bool(cursor.rowcount == 1)
