"""Making ids: one generator per layout and process, holding a leased worker id, a clock watch and a counter.

The clock functions are module attributes so tests can move the clock: `wall_ns` (the time ids carry),
`monotonic` (the lease's safety deadline, immune to clock steps) and `sleep`.

The hot path takes no lock: each tick's ids are a range iterator, published with the monotonic time until
which it may be used (the tick's end or the lease deadline, whichever is first) as one tuple. Under the GIL
`next()` on a range iterator is atomic, so each value goes to one caller; a free-threaded interpreter takes
the generator's lock instead.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from django.core.signals import setting_changed
from django.db import DatabaseError
from django.dispatch import receiver

from django_segment_seq.conf import SETTING_NAME, app_settings
from django_segment_seq.exceptions import SequenceMisconfigured, SequenceUnavailable
from django_segment_seq.snowflake import leases
from django_segment_seq.snowflake.exceptions import (
    ClockMovedBackwards,
    SnowflakeError,
    WorkerIdFenced,
    WorkerLeaseExpired,
)
from django_segment_seq.snowflake.layouts import Layout, get_layout
from django_segment_seq.snowflake.renewer import Renewer

logger = logging.getLogger("django_segment_seq.snowflake")

wall_ns = time.time_ns
monotonic = time.monotonic
sleep = time.sleep

# Share of the lease time after the start of the last good renewal at which a process stops issuing:
# the rest is the safety margin (a database clock stepping forward, a slow renewal answer).
ISSUE_SHARE = 0.75
# The background thread renews every lease this often, as a share of the lease time (4 tries before the stop).
RENEW_SHARE = 1 / 6
# After a failed attempt to take a lease, callers get the same error without a new round trip for this long.
RETRY_PAUSE = 1.0


# False on a free-threaded interpreter, where a shared iterator's next() is not atomic.
LOCK_FREE = bool(getattr(sys, "_is_gil_enabled", lambda: True)())

NO_IDS: Iterator[int] = iter(())

# Layout name -> (monotonic time until which the iterator may be used, the current tick's remaining ids).
# Replaced whole, so a reader never pairs one tick's ids with another tick's (or lease's) time limit.
_published: dict[str, tuple[float, Iterator[int]]] = {}


class Generator:
    """Ids of one layout for this process: (tick << shift) | (worker id << shift) | counter, one tick at a time."""

    __slots__ = (
        "_ceiling_ms",
        "_deadline",
        "_epoch_ms",
        "_epoch_ns",
        "_failure",
        "_fenced_until_ns",
        "_ids",
        "_last",
        "_lock",
        "_max_counter",
        "_retry_after",
        "_tolerance_ns",
        "_ttl_ms",
        "_unit_ns",
        "_until",
        "layout",
        "lease",
        "max_workers",
        "ttl",
    )  # fmt: skip

    def __init__(self, layout: Layout) -> None:
        settings = app_settings()
        self.layout = layout
        self._lock = threading.Lock()
        self._unit_ns = layout.unit_ms * 1_000_000
        self._epoch_ms = int(settings["SNOWFLAKE_EPOCH_MS"])
        self._epoch_ns = self._epoch_ms * 1_000_000
        self._tolerance_ns = int(settings["SNOWFLAKE_CLOCK_TOLERANCE"] * 1e9)
        self.ttl = float(settings["SNOWFLAKE_LEASE_SECONDS"])
        self._ttl_ms = int(self.ttl * 1000)
        wanted = settings["SNOWFLAKE_MAX_WORKERS"]
        self.max_workers = layout.max_worker + 1 if wanted is None else min(wanted, layout.max_worker + 1)
        self._max_counter = layout.max_counter
        self.lease: leases.Lease | None = None
        self._last = -1  # tick of the last id
        self._ids = NO_IDS  # the last tick's ids not yet handed out; none: the next id needs a later tick
        # Monotonic time until which the fast path may count on in the last tick: the end of the tick
        # (mapped from the wall clock when it began) or the lease deadline, whichever is first.
        self._until = -math.inf
        self._deadline = -math.inf  # monotonic time after which no id is issued without a renewal
        self._ceiling_ms = -1  # ids carry times up to this (Unix ms), as written to the lease row
        self._retry_after = -math.inf
        self._failure: SnowflakeError | SequenceUnavailable | None = None
        self._fenced_until_ns = 0  # wall time before which the lease's ids must not start (a failover fence)

    # --- the hot path (lock-free in next_snowflake) ----------------------------------------------

    def take(self) -> int:
        """One id under the lock: every id on a free-threaded interpreter, else the calls finding no published ids."""
        with self._lock:
            if monotonic() < self._until:
                for value in self._ids:
                    return value
            return self.take_slow()

    def take_slow(self) -> int:
        """A new tick, a used-up counter, a clock behind the last id, or a lease to take or renew (lock held).

        The wall clock is read here, once per tick at most when ids flow; within a tick the fast path only
        reads the monotonic clock, so a wall clock step is seen at the next tick.
        """
        layout = self.layout
        now_ns = wall_ns()
        while True:
            if monotonic() >= self._deadline:
                self._foreground_lease()
                now_ns = wall_ns()
            if now_ns < self._fenced_until_ns and self.lease is not None:
                raise WorkerIdFenced(layout.name, self.lease.worker_id, (self._fenced_until_ns - now_ns) / 1e9)
            now = (now_ns - self._epoch_ns) // self._unit_ns
            if now > self._last:
                if self._epoch_ms + (now + 1) * layout.unit_ms - 1 > self._ceiling_ms:
                    self._foreground_lease()  # the clock jumped past what the row covers: raises
                if not 0 <= now <= layout.max_time:
                    raise SequenceMisconfigured(
                        f"snowflake:{layout.name}",
                        f"the clock ({now_ns // 1_000_000} Unix ms) is outside the layout's lifetime from "
                        f"SEGMENT_SEQ['SNOWFLAKE_EPOCH_MS'] {self._epoch_ms} ({layout.lifetime.days} days)",
                    )
                if self.lease is None:  # not reached: the deadline check above takes one or raises
                    raise WorkerLeaseExpired(layout.name, None, "no lease is held")
                self._last = now
                prefix = (now << layout.time_shift) | (self.lease.worker_id << layout.worker_shift)
                self._ids = iter(range(prefix + 1, prefix + self._max_counter + 1))
                self._publish(now_ns)
                return prefix
            if now == self._last:
                for value in self._ids:
                    self._publish(now_ns)  # the limit passed but the tick goes on (or the deadline moved)
                    return value
            # The counter of this tick is used up, or the clock is behind the last id: wait for the clock.
            behind_ns = self._epoch_ns + (self._last + 1) * self._unit_ns - now_ns
            if now < self._last and behind_ns - self._unit_ns > self._tolerance_ns:
                raise ClockMovedBackwards(layout.name, (behind_ns - self._unit_ns) / 1e6, self._tolerance_ns / 1e6)
            sleep(max(behind_ns, 0) / 1e9)
            now_ns = wall_ns()

    def _publish(self, now_ns: int) -> None:
        """Let callers take the rest of this tick's ids without the lock until its end or the lease deadline."""
        tick_left = (self._epoch_ns + (self._last + 1) * self._unit_ns - now_ns) / 1e9
        self._until = min(monotonic() + tick_left, self._deadline)
        if _generators.get(self.layout.name) is self:  # a generator already given up publishes nothing
            _published[self.layout.name] = (self._until, self._ids)

    def _unpublish(self) -> None:
        published = _published.get(self.layout.name)
        if published is not None and published[1] is self._ids:
            del _published[self.layout.name]
        self._ids = NO_IDS
        self._until = -math.inf

    # --- the lease ------------------------------------------------------------------------------

    def _foreground_lease(self) -> None:
        """Called with the lock held when no id may be issued on the current lease.

        Without a lease (first id, or the row was taken) the caller takes one itself. With a lease past
        its deadline or its time ceiling, the caller is refused at once and the background thread is
        woken: a caller never waits on the database while a lease it may no longer use is still its own.
        """
        started = monotonic()
        if self.lease is not None:
            _renewer.wake()
            if started >= self._deadline:
                detail = f"no renewal succeeded for {self.ttl * ISSUE_SHARE:.1f} s of the {self.ttl:g} s lease"
            else:
                detail = "the clock is past the time ceiling written on the lease; renewing"
            raise WorkerLeaseExpired(self.layout.name, self.lease.worker_id, detail)
        if started < self._retry_after and self._failure is not None:
            raise self._failure
        # The row's time ceiling must cover the whole tick of the latest id made before the next renewal.
        wall_ms = wall_ns() // 1_000_000 + self.layout.unit_ms
        alias = leases.lease_database()
        try:
            lease = leases.acquire(self.layout, alias, self._ttl_ms, self.max_workers, wall_ms)
        except DatabaseError as exc:
            failure = SequenceUnavailable(f"snowflake:{self.layout.name}", alias, 1, exc)
            self._fail(failure)
            raise failure from exc
        except SnowflakeError as exc:
            self._fail(exc)
            raise
        self._install(lease, started)

    def _fail(self, failure: SnowflakeError | SequenceUnavailable) -> None:
        self._failure = failure
        self._retry_after = monotonic() + RETRY_PAUSE

    def _install(self, lease: leases.Lease, started: float) -> None:
        self.lease = lease
        self._failure = None
        self._retry_after = -math.inf
        floor = (lease.floor_ms - self._epoch_ms) // self.layout.unit_ms if lease.floor_ms else -1
        # A new worker id: start at a tick after both our last id and the previous holder's.
        self._last = max(self._last, floor)
        self._unpublish()
        self._ceiling_ms = lease.ceiling_ms
        self._fenced_until_ns = lease.fenced_until_ms * 1_000_000
        self._deadline = started + self.ttl * ISSUE_SHARE
        _renewer.ensure_running(self.ttl * RENEW_SHARE)

    def _drop_lease(self) -> None:
        self.lease = None
        self._deadline = -math.inf
        self._unpublish()

    def _next_ceiling(self, wall_ms: int) -> int:
        """The time ceiling a renewal writes: the lease time ahead, plus a tick (an id's time is its tick's start)."""
        return max(self._ceiling_ms, wall_ms + self._ttl_ms + self.layout.unit_ms)

    def _renewed(self, started: float, ceiling_ms: int) -> None:
        self._deadline = max(self._deadline, started + self.ttl * ISSUE_SHARE)
        self._ceiling_ms = max(self._ceiling_ms, ceiling_ms)

    def renew_in_background(self) -> None:
        """One renewal by the background thread; the database round trip runs without the lock."""
        with self._lock:
            lease = self.lease
            if lease is None:
                return
            ceiling_ms = self._next_ceiling(wall_ns() // 1_000_000)
        started = monotonic()
        try:
            renewed = leases.renew(lease, self._ttl_ms, ceiling_ms)
        except DatabaseError as exc:
            logger.warning("Snowflake %s: renewing worker id %s failed: %s", self.layout.name, lease.worker_id, exc)
            return
        with self._lock:
            if self.lease is not lease:
                return
            if renewed:
                self._renewed(started, ceiling_ms)
            else:
                logger.warning(
                    "Snowflake %s: worker id %s was taken by another process", self.layout.name, lease.worker_id
                )
                self._drop_lease()

    def release(self) -> None:
        """Give the worker id back now, leaving the time of the last id on the row."""
        with self._lock:
            lease = self.lease
            self._drop_lease()
            if lease is None:
                return
            last_ms = self._epoch_ms + (self._last + 1) * self.layout.unit_ms - 1 if self._last >= 0 else 0
            leases.release(lease, max(lease.floor_ms, last_ms))


_renewer = Renewer(lambda: [generator.renew_in_background for generator in list(_generators.values())])
_generators: dict[str, Generator] = {}
_registry_lock = threading.Lock()


def generator_for(layout: str) -> Generator:
    shape = get_layout(layout)
    with _registry_lock:
        generator = _generators.get(layout)
        if generator is None:
            generator = _generators[layout] = Generator(shape)
        return generator


if LOCK_FREE:

    def next_snowflake(*, layout: str = "classic") -> int:
        """A new id of `layout` ("classic": 63 bits; "js53": below 2**53): unique, and increasing within the process."""
        # While the published tick lasts: a dict lookup, a monotonic clock reading and the iterator's next value.
        try:
            until, ids = _published[layout]
        except KeyError:
            return _take(layout)
        if monotonic() < until:
            for value in ids:
                return value
        return _take(layout)

else:

    def next_snowflake(*, layout: str = "classic") -> int:
        """A new id of `layout` ("classic": 63 bits; "js53": below 2**53): unique, and increasing within the process."""
        return _take(layout)  # free-threaded: every id under the generator's lock


def _take(layout: str) -> int:
    generator = _generators.get(layout)
    if generator is None:
        generator = generator_for(layout)
    return generator.take()


def release_worker_leases() -> None:
    """Give back this process's worker ids now (e.g. at shutdown) instead of letting them expire; retaken on demand."""
    _renewer.stop(pause=False)
    with _registry_lock:
        generators = list(_generators.values())
        _generators.clear()
        _published.clear()
    for generator in generators:
        try:
            generator.release()
        except DatabaseError as exc:
            logger.warning("Snowflake %s: releasing the lease failed (it will expire): %s", generator.layout.name, exc)


def held_worker_ids() -> dict[str, int]:
    """This process's worker id per layout, for the layouts it holds a lease of."""
    return {name: g.lease.worker_id for name, g in list(_generators.items()) if g.lease is not None}


def _after_fork_in_child() -> None:
    """A child must not share its parent's worker id: forget the parent's leases (the parent keeps them)."""
    global _registry_lock
    _registry_lock = threading.Lock()
    _published.clear()
    _generators.clear()
    _renewer.after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(release_worker_leases)


@receiver(setting_changed)
def _forget_generators(*, setting: str, **kwargs: Any) -> None:
    """New epoch, lease time or limits take effect with new generators; the old leases are given back."""
    if setting == SETTING_NAME:
        release_worker_leases()
