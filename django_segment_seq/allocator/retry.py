"""The one retry loop every write to a Sequence row runs in, a block taken (loop.py) or a row made (rows.py).

Where an attempt runs is asked of callers (the one home of that decision): on the caller's own connection
when it is idle in autocommit (no second connection), else on a private autocommit connection. Only when
the caller's own transaction holds the row (it created, edited or locked it; on SQLite, holds the file's
write lock) does the work run inside that transaction. A row missing or busy, a standby that does not
confirm, a transient failure: each is retried here, with jittered back-off, within the bounds of the
settings (LOCK_TIMEOUT, CLUSTER_PAUSE, CLUSTER_LOST, CONNECTION_RETRIES, MAX_RETRIES).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from django.db import DatabaseError
from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.allocator import callers
from django_segment_seq.allocator.attempts import (
    TRANSIENT_ERRORS,
    RowBusy,
    RowMissing,
    attempt_on,
    backoff,
    caller_carries,
    use_caller_next,
)
from django_segment_seq.allocator.callers import Session
from django_segment_seq.allocator.connections import NoServerFit, refuse_if_unfit
from django_segment_seq.allocator.request import FetchProgress
from django_segment_seq.db.driver_errors import table_missing
from django_segment_seq.db.nodes import on_galera
from django_segment_seq.db.standbys import StandbyUnconfirmed
from django_segment_seq.exceptions import (
    SequenceContention,
    SequenceNotFound,
    SequenceTableMissing,
    SequenceUnavailable,
)

__all__ = ["Job", "Plan", "run"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# What a Galera cluster's pause looks like to one attempt: the row held (commits stopped), or a failure.
PAUSE_SIGNS: tuple[type[Exception], ...] = (RowBusy, *TRANSIENT_ERRORS)


class Job(Protocol[T_co]):
    """One write the loop retries: what an attempt does, and the few ways one kind of write is treated apart."""

    @property
    def alias(self) -> str: ...

    @property
    def name(self) -> str:
        """The row the errors name."""
        ...

    @property
    def rows(self) -> tuple[str, ...]:
        """The rows whose holding by the caller's transaction sends the work inside that transaction."""
        ...

    @property
    def creates(self) -> bool:
        """Whether a missing row may be made: if not, a row missing outside the caller's transaction is
        SequenceNotFound."""
        ...

    @property
    def patient(self) -> bool:
        """A block taken: a row held elsewhere is waited for (LOCK_TIMEOUT, CLUSTER_PAUSE on Galera) and a cluster
        that lost its nodes is watched (CLUSTER_LOST). A row made: its statement waited already, so a row held
        is SequenceUnavailable at once."""
        ...

    def attempt(self, connection: BaseDatabaseWrapper, plan: Plan) -> T_co:
        """One try on `connection`, outside any transaction: RowMissing, RowBusy or a database error if it failed."""
        ...

    def inside(self, caller: BaseDatabaseWrapper, plan: Plan) -> T_co:
        """The work inside the caller's transaction, known to hold the row: a failure there is a named error."""
        ...

    def inside_if_held(self, caller: BaseDatabaseWrapper, plan: Plan) -> T_co | None:
        """The work inside the caller's transaction, found to hold the row; None to go on outside it after all."""
        ...


@dataclass(slots=True)
class Plan:
    """Where the next attempt of one write runs, how long a row held elsewhere is still waited for, and what the
    attempts so far cost."""

    caller: BaseDatabaseWrapper | None
    settings: dict[str, Any]
    # In a transaction that may hold the row: a row busy or missing on a private connection is asked
    # of the caller's transaction before it is waited for or inserted.
    ask_caller: bool
    use_caller: bool
    # Whether the cluster is watched: private connections opened until CLUSTER_LOST, a Galera pause waited out.
    patient: bool
    started: float = field(default_factory=time.monotonic)
    # How long a row held elsewhere is waited for: LOCK_TIMEOUT, or CLUSTER_PAUSE once the server is known
    # to be a Galera node, whose writes all stop while a lost node is not yet evicted.
    bound: float = 0.0
    deadline: float = 0.0
    held_version: int | None = None
    galera: bool = False
    # Until when a primary whose standbys do not confirm its writes is asked again (LOCK_TIMEOUT from the first no).
    standby_deadline: float | None = None
    # Attempts that found the row held by another transaction, and attempts that failed.
    busy: int = 0
    failures: int = 0
    # Where callers waiting for this fetch see whether it waits out a held row (see FetchProgress).
    progress: FetchProgress = field(default_factory=FetchProgress)

    @classmethod
    def begin(
        cls,
        caller: BaseDatabaseWrapper | None,
        settings: dict[str, Any],
        *,
        patient: bool,
        progress: FetchProgress | None = None,
    ) -> Plan:
        """The first attempt's plan: on the caller's connection when it can carry the work, bounded by LOCK_TIMEOUT."""
        state = Session.UNUSABLE if caller is None else callers.session(caller)
        plan = cls(
            caller,
            settings,
            ask_caller=caller is not None and state is Session.IN_TRANSACTION,
            use_caller=caller is not None and caller_carries(caller, state),
            patient=patient,
            progress=progress or FetchProgress(),
        )
        plan.bound = settings["LOCK_TIMEOUT"]
        plan.deadline = plan.started + plan.bound
        return plan

    @property
    def lost(self) -> float | None:
        """Until when private connections are opened on the servers of SERVERS (CLUSTER_LOST from the start)."""
        return self.started + self.settings["CLUSTER_LOST"] if self.patient else None

    def learn_cluster(self, connection: BaseDatabaseWrapper) -> None:
        """After a row found busy or a failure: on a Galera node, wait as long as CLUSTER_PAUSE from the start."""
        if self.galera or not on_galera(connection):
            return
        self.galera = True
        self.bound = max(self.bound, self.settings["CLUSTER_PAUSE"])
        self.deadline = max(self.deadline, self.started + self.bound)

    def gives_up(self, exc: Exception) -> bool:
        """After a failure: past CONNECTION_RETRIES outside a Galera pause, or once no server of SERVERS would do
        for CLUSTER_LOST seconds (a caller cut off with a minority node waits no longer for the cluster)."""
        lost = self.lost
        if isinstance(exc, NoServerFit) and lost is not None and time.monotonic() >= lost:
            return True
        return self.failures > self.settings["CONNECTION_RETRIES"] and not self.paused()

    def paused(self) -> bool:
        """Whether failures are still waited out: a Galera cluster's pause, within CLUSTER_PAUSE from the start."""
        return self.galera and time.monotonic() < self.started + self.bound

    def wait_for_holder(self, exc: RowBusy, alias: str, name: str) -> None:
        """Another transaction holds the row: wait for it, within LOCK_TIMEOUT (CLUSTER_PAUSE on Galera).

        The bound restarts while the row keeps moving: short holds by one process after another are
        contention, which MAX_RETRIES bounds. A row first found held (a version not seen held before) is waited for
        from the read that found it, so a fetch slowed by lost races or a starved CPU (in this attempt or before it)
        still gives a held row its whole LOCK_TIMEOUT.
        """
        first = exc.row is not None and self.held_version is None
        moved = exc.row is not None and self.held_version is not None and exc.row.version != self.held_version
        if exc.row is not None:
            self.held_version = exc.row.version
        if first:
            found_at = time.monotonic() if exc.found_at is None else exc.found_at
            self.deadline = max(self.deadline, found_at + self.bound)
        if moved:
            self.deadline = time.monotonic() + self.bound
            self.progress.held_until = None  # others are taking ranges: contention, not a holder
            if self.busy > self.settings["MAX_RETRIES"]:
                raise SequenceContention(name, self.busy) from exc
        elif time.monotonic() >= self.deadline:
            raise SequenceUnavailable(
                name,
                alias,
                self.busy,
                RowBusy(f"the row or its table was held by another transaction for over {self.bound:g} s"),
            ) from exc
        else:
            self.progress.held_until = self.deadline
        backoff(self.busy, self.settings["MAX_BACKOFF"])

    def wait_for_standby(self, exc: StandbyUnconfirmed, alias: str, name: str) -> None:
        """The primary's standbys do not confirm its writes: a slow answer is waited for, within LOCK_TIMEOUT; a
        primary cut off from them never hands out a number, and its callers get SequenceUnavailable."""
        now = time.monotonic()
        if self.standby_deadline is None:
            self.standby_deadline = now + self.settings["LOCK_TIMEOUT"]
        if now >= self.standby_deadline:
            raise SequenceUnavailable(name, alias, self.failures, exc) from exc
        backoff(self.failures, self.settings["MAX_BACKOFF"])


def run(job: Job[T], plan: Plan) -> T:
    """Run `job` until it succeeds or a bound of the settings is reached (then a named SequenceError)."""
    caller = plan.caller
    if caller is not None and plan.ask_caller and any(callers.known_to_hold(caller, row) for row in job.rows):
        return job.inside(caller, plan)
    while True:
        try:
            return _attempt(job, plan)
        except RowMissing:
            if not job.creates:
                raise SequenceNotFound(job.name, job.alias) from None
            done = _in_caller_if_its_row(job, plan)
            if done is not None:
                return done
            plan.ask_caller = False  # not the caller's: created on a connection whose lock waits are bounded
        except RowBusy as exc:
            plan.busy += 1
            done = _in_caller_if_its_row(job, plan)
            if done is not None:
                return done
            if not job.patient:
                raise SequenceUnavailable(job.name, job.alias, 1, exc) from exc
            plan.wait_for_holder(exc, job.alias, job.name)
        except StandbyUnconfirmed as exc:
            plan.failures += 1
            plan.wait_for_standby(exc, job.alias, job.name)
        except TRANSIENT_ERRORS as exc:
            if table_missing(exc):
                raise SequenceTableMissing(job.name, job.alias, exc) from exc
            plan.failures += 1
            if plan.gives_up(exc):
                raise SequenceUnavailable(job.name, job.alias, plan.failures, exc) from exc
            plan.use_caller = use_caller_next(plan.caller, plan.use_caller)
            backoff(plan.failures, plan.settings["MAX_BACKOFF"])
        except DatabaseError as exc:
            if table_missing(exc):  # retrying cannot make the table: a configuration error, said at once
                raise SequenceTableMissing(job.name, job.alias, exc) from exc
            raise


def _attempt(job: Job[T], plan: Plan) -> T:
    """One try on the connection the plan names; for a patient job, a failure that looks like a Galera pause
    teaches the plan, and a private connection's node no longer fit is left for the next attempt."""
    with attempt_on(job.alias, plan.caller if plan.use_caller else None, plan.lost) as connection:
        if not job.patient:
            return job.attempt(connection, plan)
        try:
            return job.attempt(connection, plan)
        except PAUSE_SIGNS:
            plan.learn_cluster(connection)
            if not plan.use_caller:
                refuse_if_unfit(job.alias, connection)  # a node no longer fit: the next attempt goes elsewhere
            raise


def _in_caller_if_its_row(job: Job[T], plan: Plan) -> T | None:
    """The work inside the caller's transaction when that transaction holds the row; None otherwise."""
    caller = plan.caller
    if caller is None or not plan.ask_caller or not any(callers.holds_row(caller, row) for row in job.rows):
        return None
    return job.inside_if_held(caller, plan)
