"""Takes blocks of numbers from the Sequence table with compare-and-set, on a connection that can commit them.

Where a block is taken is asked of callers (the one home of that decision): on the caller's own
connection when it is idle in autocommit (no second connection), else on a private autocommit
connection. Only when the caller's own transaction holds the row (it created, edited or locked it;
on SQLite, holds the file's write lock) is the block taken inside that transaction: it is then
provisional, and the cache uses it only while that transaction stands. Every statement waits at most
LOCK_TIMEOUT for any lock, on any of these connections.
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
from django_segment_seq.allocator.attempts import (
    TRANSIENT_ERRORS,
    RowBusy,
    RowMissing,
    attempt_on,
    backoff,
    caller_carries,
    is_lock_timeout,
    is_lost_race,
    use_caller_next,
)
from django_segment_seq.allocator.blocks import Block, Row, failover_skip, next_block, restore_skip
from django_segment_seq.allocator.callers import Session
from django_segment_seq.allocator.connections import NoServerFit, refuse_if_unfit
from django_segment_seq.allocator.rows import create_row, read_row
from django_segment_seq.allocator.tier_figures import TierFigures
from django_segment_seq.conf import app_settings
from django_segment_seq.db.bounded import in_savepoint, write_transaction
from django_segment_seq.db.history import server_history, unfenced_history, with_table
from django_segment_seq.db.identity import current_identity, table_identity
from django_segment_seq.db.nodes import on_galera
from django_segment_seq.db.standbys import StandbyUnconfirmed, confirmed_history
from django_segment_seq.db.statements import Statements, statements_for
from django_segment_seq.exceptions import (
    SequenceContention,
    SequenceMisconfigured,
    SequenceNotFound,
    SequenceUnavailable,
)

__all__ = ["Allocation", "allocate"]

logger = logging.getLogger("django_segment_seq")

# What a Galera cluster's pause looks like to one attempt: the row held (commits stopped), or a failure.
PAUSE_SIGNS: tuple[type[Exception], ...] = (RowBusy, *TRANSIENT_ERRORS)


@dataclass(slots=True)
class Allocation:
    """A block now owned by the caller, with the row's step and what it cost to get."""

    block: Block = Block(0, -1)  # noqa: RUF009 - a NamedTuple: immutable, safe to share
    step: int = 0
    # Compare-and-sets lost to other processes (SequenceStats.retries adds them up).
    retries: int = 0
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
    # What the Redis tier did for this block (redistier/source.py); None for a block off the tier.
    tier: TierFigures | None = None


@dataclass(slots=True)
class _Plan:
    """Where the next attempt of one allocation runs, and how long a row held elsewhere is still waited for."""

    caller: BaseDatabaseWrapper | None
    # In a transaction that may hold the row: a row busy or missing on a private connection is asked
    # of the caller's transaction before it is waited for or inserted.
    ask_caller: bool
    use_caller: bool
    deadline: float
    # How long a row held elsewhere is waited for: LOCK_TIMEOUT, or CLUSTER_PAUSE once the server is known
    # to be a Galera node, whose writes all stop while a lost node is not yet evicted.
    bound: float
    started: float
    held_version: int | None = None
    galera: bool = False
    # Until when a primary whose standbys do not confirm its writes is asked again (LOCK_TIMEOUT from the first no).
    standby_deadline: float | None = None

    @classmethod
    def begin(cls, caller: BaseDatabaseWrapper | None, state: Session, settings: dict[str, Any]) -> _Plan:
        """The first attempt's plan: on the caller's connection when it can carry the block, bounded by LOCK_TIMEOUT."""
        started = time.monotonic()
        return cls(
            caller,
            caller is not None and state is Session.IN_TRANSACTION,
            caller is not None and caller_carries(caller, state),
            started + settings["LOCK_TIMEOUT"],
            settings["LOCK_TIMEOUT"],
            started,
        )

    def learn_cluster(self, connection: BaseDatabaseWrapper, settings: dict[str, Any]) -> None:
        """After a row found busy or a failure: on a Galera node, wait as long as CLUSTER_PAUSE from the start."""
        if self.galera or not on_galera(connection):
            return
        self.galera = True
        self.bound = max(self.bound, settings["CLUSTER_PAUSE"])
        self.deadline = max(self.deadline, self.started + self.bound)

    def gives_up(self, exc: Exception, failures: int, settings: dict[str, Any]) -> bool:
        """After a failure: past CONNECTION_RETRIES outside a Galera pause, or once no server of SERVERS would do
        for CLUSTER_LOST seconds (a caller cut off with a minority node waits no longer for the cluster)."""
        if isinstance(exc, NoServerFit) and time.monotonic() >= self.started + settings["CLUSTER_LOST"]:
            return True
        return failures > settings["CONNECTION_RETRIES"] and not self.paused()

    def paused(self) -> bool:
        """Whether failures are still waited out: a Galera cluster's pause, within CLUSTER_PAUSE from the start."""
        return self.galera and time.monotonic() < self.started + self.bound


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
    plan = _Plan.begin(caller, state, settings)
    while True:
        try:
            _attempt(plan, alias, name, wanted, settings, result, prefer=prefer, create=create)
            return result
        except RowMissing:
            if not create:
                raise SequenceNotFound(name, alias) from None
            held = _in_caller_if_its_row(plan, alias, name, wanted, settings, result)
            if held is not None:
                return held
            plan.ask_caller = False  # not the caller's: created on a connection whose lock waits are bounded
        except RowBusy as exc:
            result.busy += 1
            held = _in_caller_if_its_row(plan, alias, name, wanted, settings, result)
            if held is not None:
                return held
            _wait_for_holder(plan, exc, alias, name, settings, result)
        except StandbyUnconfirmed as exc:
            result.failures += 1
            _wait_for_standby(plan, exc, alias, name, settings, result)
        except TRANSIENT_ERRORS as exc:
            result.failures += 1
            if plan.gives_up(exc, result.failures, settings):
                raise SequenceUnavailable(name, alias, result.failures, exc) from exc
            plan.use_caller = use_caller_next(plan.caller, plan.use_caller)
            backoff(result.failures, settings["MAX_BACKOFF"])


def _attempt(
    plan: _Plan,
    alias: str,
    name: str,
    wanted: int,
    settings: dict[str, Any],
    result: Allocation,
    *,
    prefer: int,
    create: bool,
) -> None:
    """One try on the connection the plan names; a failure that looks like a Galera pause teaches the plan."""
    lost = plan.started + settings["CLUSTER_LOST"]
    with attempt_on(alias, plan.caller if plan.use_caller else None, lost) as connection:
        create_here = create and not plan.ask_caller
        try:
            _compare_and_set(connection, alias, name, wanted, settings, result, prefer, create_here, plan.use_caller)
        except PAUSE_SIGNS:
            plan.learn_cluster(connection, settings)
            if not plan.use_caller:
                refuse_if_unfit(alias, connection)  # a node no longer fit: the next attempt goes elsewhere
            raise


def _in_caller_if_its_row(
    plan: _Plan, alias: str, name: str, wanted: int, settings: dict[str, Any], result: Allocation
) -> Allocation | None:
    """A block inside the caller's transaction when that transaction holds the row; None otherwise."""
    if plan.caller is None or not plan.ask_caller or not callers.holds_row(plan.caller, name):
        return None
    return _inside_if_held(plan.caller, alias, name, wanted, settings, result)


def _wait_for_holder(
    plan: _Plan, exc: RowBusy, alias: str, name: str, settings: dict[str, Any], result: Allocation
) -> None:
    """Another transaction holds the row: wait for it, within LOCK_TIMEOUT (CLUSTER_PAUSE on Galera).

    The bound restarts while the row keeps moving: short holds by one process after another are
    contention, which MAX_RETRIES bounds.
    """
    moved = exc.row is not None and plan.held_version is not None and exc.row.version != plan.held_version
    if exc.row is not None:
        # The first sight of the row held starts no new bound: the attempt that saw it has waited from the start.
        plan.held_version = exc.row.version
    if moved:
        plan.deadline = time.monotonic() + plan.bound
        if result.busy > settings["MAX_RETRIES"]:
            raise SequenceContention(name, result.busy) from exc
    elif time.monotonic() >= plan.deadline:
        raise SequenceUnavailable(
            name,
            alias,
            result.busy,
            RowBusy(f"the row or its table was held by another transaction for over {plan.bound:g} s"),
        ) from exc
    backoff(result.busy, settings["MAX_BACKOFF"])


def _wait_for_standby(
    plan: _Plan, exc: StandbyUnconfirmed, alias: str, name: str, settings: dict[str, Any], result: Allocation
) -> None:
    """The primary's standbys do not confirm its writes: a slow answer is waited for, within LOCK_TIMEOUT; a primary
    cut off from them never hands out a number, and its callers get SequenceUnavailable."""
    now = time.monotonic()
    if plan.standby_deadline is None:
        plan.standby_deadline = now + settings["LOCK_TIMEOUT"]
    if now >= plan.standby_deadline:
        raise SequenceUnavailable(name, alias, result.failures, exc) from exc
    backoff(result.failures, settings["MAX_BACKOFF"])


def _inside(
    caller: BaseDatabaseWrapper, alias: str, name: str, wanted: int, settings: dict[str, Any], result: Allocation
) -> Allocation:
    """A block inside the caller's transaction, known to hold the row; a failure there is a named error."""
    try:
        return _in_caller_transaction(caller, alias, name, wanted, settings, result)
    except (RowBusy, StandbyUnconfirmed, OperationalError, InterfaceError) as exc:
        raise SequenceUnavailable(name, alias, result.busy + 1, exc) from exc


def _inside_if_held(
    caller: BaseDatabaseWrapper, alias: str, name: str, wanted: int, settings: dict[str, Any], result: Allocation
) -> Allocation | None:
    """A block inside the caller's transaction; None if the row turned out not to be the caller's after all."""
    try:
        return _in_caller_transaction(caller, alias, name, wanted, settings, result)
    except (RowBusy, StandbyUnconfirmed, OperationalError, InterfaceError):
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
                    raise RowMissing  # nobody else can hold it, and the caller did not create it
                result.round_trips += 1
                create_row(caller, cursor, sql.insert_if_missing, alias, name, settings)
                row = read_row(cursor, sql.select_row, name)
                if row is None:  # pragma: no cover - the insert above either created it or found it
                    raise SequenceNotFound(name, alias)
            # Exactly the numbers asked for, no failover skip: the block commits with the caller's rows or not at all,
            # and a rest kept for later could be undone by the caller (a raw ROLLBACK TO SAVEPOINT) unseen.
            block = next_block(name, row._replace(step=1), wanted)
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
    """Take the next block on `connection`, outside any transaction, and make sure it committed before it is used."""
    sql = statements_for(connection, settings["LOCK_TIMEOUT"])
    history = server_history(connection)
    try:
        with connection.cursor() as cursor, write_transaction(cursor, sql, callers=on_caller):
            row, block, table = _take_block(
                connection, cursor, sql, history, alias, name, wanted, settings, result, prefer, create
            )
    except DatabaseError as exc:
        if is_lock_timeout(exc):
            raise RowBusy(str(exc)) from exc
        raise
    _require_committed(connection, alias, name)
    result.block, result.step, result.version = block, row.step, row.version + 1
    result.row = row
    seen.note(alias, name, row.version + 1, block.last, table)


def _take_block(
    connection: BaseDatabaseWrapper,
    cursor: Any,
    sql: Statements,
    history: str,
    alias: str,
    name: str,
    wanted: int,
    settings: dict[str, Any],
    result: Allocation,
    prefer: int,
    create: bool,
) -> tuple[Row, Block, str]:
    """Read the row and move it past the next block by compare-and-set, again after each lost race; the row as
    read, the block and the table's identity."""
    while True:
        try:
            row = _read_unless_locked(cursor, sql, name, result)
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
        block = next_block(name, row, wanted, prefer, skip)
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        current, sent = confirmed_history(connection, cursor, row.history, current)
        result.round_trips += sent + 1
        if _try_compare_and_set(cursor, sql.compare_and_set, [block.last, now, current, name, row.value, row.version]):
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
    row = read_row(cursor, sql.select_row_unless_locked, name)
    if row is None and sql.select_row_unless_locked != sql.select_row:
        result.round_trips += 1
        committed = read_row(cursor, sql.select_row, name)
        if committed is not None:
            raise RowBusy("the row is locked by another transaction", committed)
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
