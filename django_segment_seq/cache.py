"""Per-process cached ranges: numbers come from memory under one short lock, the database is asked once per range.

Keyed by (database alias, sequence name). With prefetch on, the next range is fetched by a
background thread once a share of the current one is used, so callers seldom wait for the
database; with the adaptive step, ranges grow under heavy demand and shrink under light demand.
Cleared in a child after fork(), so a child never hands out its parent's cached or prefetched numbers.
"""

from __future__ import annotations

import functools
import os
import random
import threading
import time
from dataclasses import dataclass, replace
from weakref import WeakKeyDictionary

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from .allocator import SQLITE_LOCK_WAIT, Allocation, allocate, allocate_in_transaction
from .conf import app_settings
from .exceptions import SequenceUnavailable
from .prefetch import prefetcher
from .ranges import Block
from .transactions import commit_hook_queued, in_sqlite_transaction

# How long a caller inside a SQLite transaction waits for a thread that may be blocked on its write lock.
SQLITE_SLOT_WAIT = 0.05
# How long a background fetch on SQLite waits for the write lock, which a caller's transaction may hold.
SQLITE_BACKGROUND_LOCK_WAIT = 0.5


@dataclass(slots=True)
class SequenceStats:
    """What one process did for one sequence: the figures benchmarks and monitoring read."""

    handed_out: int = 0
    ranges_fetched: int = 0
    # Fetches a caller ran itself and waited for (the first one, after a failed prefetch, prefetch off).
    foreground_fetches: int = 0
    # Fetches run by the prefetch thread while callers kept taking numbers from memory.
    background_fetches: int = 0
    background_failures: int = 0
    # Callers that ran out while a background fetch was still in flight, and waited for it.
    waits_for_background: int = 0
    retries: int = 0
    failures: int = 0
    # Statements the allocations sent: reads, compare-and-sets and row creations.
    round_trips: int = 0
    # Size of the latest range (the adaptive step), and the row's own step at that fetch.
    step: int = 0
    row_step: int = 0
    # SQLite only: blocks taken inside the caller's transaction because it held the write lock.
    fetched_in_caller_transaction: int = 0

    @property
    def blocking_fetches(self) -> int:
        """Times a caller had to wait for the database: the figure prefetch exists to keep at zero."""
        return self.foreground_fetches + self.waits_for_background


class _Slot:
    """The cached range [first, last] of one sequence in this process, its prefetched successor and its figures."""

    __slots__ = (
        "alias",
        "name",
        "lock",
        "ready",
        "first",
        "next",
        "last",
        "trigger",
        "started",
        "pending",
        "fetching",
        "hint",
        "contended",
        "on_sqlite",
        "wait",
        "stats",
    )

    def __init__(self, alias: str, name: str, on_sqlite: bool) -> None:
        self.alias = alias
        self.name = name
        self.lock = threading.Lock()
        self.ready = threading.Condition(self.lock)  # notified when a background fetch ends
        self.first = 1
        self.next = 1
        self.last = 0
        # Numbers below `trigger` are handed out on the hot path; at `trigger` the slow path runs
        # (prefetch, or a new range). Always <= last + 1.
        self.trigger = 1
        self.started = 0.0
        self.pending: Block | None = None
        self.fetching = False
        self.hint = 0
        self.contended = False  # the latest fetch lost a compare-and-set
        self.on_sqlite = on_sqlite
        # How long the hot path waits for the lock: on SQLite a holder may wait for this caller's write lock.
        self.wait = SQLITE_SLOT_WAIT if on_sqlite else -1
        # handed_out here counts numbers of earlier ranges; the current range's are next - first.
        self.stats = SequenceStats()

    def remaining(self) -> int:
        return self.last - self.next + 1

    def record(self, allocation: Allocation) -> None:
        self.stats.ranges_fetched += 1
        self.stats.retries += allocation.conflicts
        self.stats.failures += allocation.failures
        self.stats.round_trips += allocation.round_trips
        self.stats.row_step = allocation.step
        self.contended = allocation.conflicts > 0

    def snapshot(self) -> SequenceStats:
        stats = replace(self.stats)
        stats.handed_out += self.next - self.first
        stats.step = self.last - self.first + 1 if self.last >= self.first else stats.step
        return stats


class _StillFetching(Exception):
    """A caller inside a SQLite transaction gave up waiting for a background fetch it may itself be blocking."""


class _TransactionBlock:
    """Numbers allocated inside a caller's SQLite transaction, usable only while that allocation is not rolled back."""

    __slots__ = ("next", "last", "committed", "callback")

    def __init__(self, first: int, last: int) -> None:
        self.next = first
        self.last = last
        self.committed = False
        self.callback = None

    def alive(self, connection: BaseDatabaseWrapper) -> bool:
        # A commit hook still queued means the allocating UPDATE still stands.
        return self.committed or commit_hook_queued(connection, self.callback)


class RangeCache:
    """All cached ranges of this process."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        # Emptied in place, never replaced: api.next_value holds references to these dicts.
        if hasattr(self, "_slots"):
            self._slots.clear()
            self.by_name.clear()
        else:
            self._slots: dict[tuple[str, str], _Slot] = {}
            # The slots of the one alias next_value() uses without being told (see api), by name alone.
            self.by_name: dict[str, _Slot] = {}
        self._guard = threading.Lock()
        self._in_transaction: WeakKeyDictionary[BaseDatabaseWrapper, dict[str, _TransactionBlock]] = (
            WeakKeyDictionary()
        )

    def take(self, alias: str, name: str) -> int:
        """One number; the hot path is a dict lookup and one short lock."""
        slot = self._slots.get((alias, name)) or self._add_slot(alias, name)
        if slot.on_sqlite:
            return self._take_sqlite(slot, 1)[0]
        with slot.lock:
            number = slot.next
            if number < slot.trigger:
                slot.next = number + 1
                return number
            return self._take_locked(slot, 1)[0]

    def take_many(self, alias: str, name: str, count: int) -> range:
        """`count` contiguous numbers: from the cached range if it holds them, else from one new block."""
        if count < 1:
            raise ValueError(f"Sequence {name!r}: the count must be at least 1, not {count}")
        slot = self._slots.get((alias, name)) or self._add_slot(alias, name)
        if slot.on_sqlite:
            return self._take_sqlite(slot, count)
        with slot.lock:
            return self._take_locked(slot, count)

    def stats(self) -> dict[tuple[str, str], SequenceStats]:
        """A copy of every sequence's figures in this process, keyed by (alias, name)."""
        result = {}
        for key, slot in list(self._slots.items()):
            # A foreground fetch holds the lock during its round trip; don't let monitoring wait long for it.
            locked = slot.lock.acquire(timeout=0.1)
            try:
                result[key] = slot.snapshot()
            finally:
                if locked:
                    slot.lock.release()
        return result

    def clear(self) -> None:
        """Forget every cached range (their numbers become gaps); for tests and after deleting rows.

        Background fetches still running are waited for first, so none lands after the caller
        has, say, emptied the Sequence table.
        """
        prefetcher.drain(timeout=30)
        self._reset()

    def _add_slot(self, alias: str, name: str) -> _Slot:
        from .models import require_valid_name

        require_valid_name(name)
        on_sqlite = connections[alias].vendor == "sqlite"
        with self._guard:
            return self._slots.setdefault((alias, name), _Slot(alias, name, on_sqlite))

    def _take_locked(self, slot: _Slot, count: int, in_sqlite_transaction: bool = False) -> range:
        """The slow path, with slot.lock held: start a prefetch, switch to the prefetched range, or fetch."""
        waited = False
        while True:
            if slot.remaining() >= count:
                first = slot.next
                slot.next = first + count
                if slot.next >= slot.trigger:
                    self._start_prefetch(slot)
                return range(first, first + count)
            pending = slot.pending
            if pending is not None and pending.size >= count:
                slot.pending = None
                self._set_range(slot, pending, 0)
                continue
            if slot.fetching:
                if not waited:
                    slot.stats.waits_for_background += 1
                    waited = True
                if in_sqlite_transaction:
                    # The fetch may be waiting for the write lock this caller's transaction holds.
                    slot.ready.wait(SQLITE_BACKGROUND_LOCK_WAIT + SQLITE_SLOT_WAIT)
                    if slot.fetching:
                        raise _StillFetching
                else:
                    slot.ready.wait()
                continue
            return self._refill(slot, count, SQLITE_LOCK_WAIT if in_sqlite_transaction else None)

    def _refill(self, slot: _Slot, wanted: int, sqlite_lock_wait: float | None = None) -> range:
        """A new block of at least max(step, wanted); returns its first `wanted` numbers and caches the rest."""
        allocation = allocate(
            slot.alias, slot.name, wanted, prefer=self._next_size(slot), sqlite_lock_wait=sqlite_lock_wait
        )
        slot.record(allocation)
        slot.stats.foreground_fetches += 1
        block = allocation.block
        if block.size > wanted or slot.next > slot.last:
            self._set_range(slot, block, wanted)
            if slot.next >= slot.trigger:
                self._start_prefetch(slot)
        else:
            slot.stats.handed_out += wanted
        return range(block.first, block.first + wanted)

    def _set_range(self, slot: _Slot, block: Block, taken: int) -> None:
        """Make `block` the current range (its first `taken` numbers already handed out); the old rest is a gap."""
        slot.stats.handed_out += slot.next - slot.first
        slot.first = block.first
        slot.next = block.first + taken
        slot.last = block.last
        slot.started = time.monotonic()
        slot.trigger = slot.last + 1
        settings = app_settings()
        if settings["PREFETCH"] and slot.pending is None and not slot.fetching:
            # Jitter the point a little, so processes that started together drift apart.
            share = settings["PREFETCH_AT"] * random.uniform(0.75, 1.25)
            slot.trigger = min(slot.last + 1, slot.first + int(block.size * share))

    def _start_prefetch(self, slot: _Slot) -> None:
        """Queue a background fetch of the next range, once per range; a failed one is not retried here."""
        slot.trigger = slot.last + 1  # the hot path serves the rest of the range
        if slot.pending is not None or slot.fetching or not app_settings()["PREFETCH"]:
            return
        prefer = self._next_size(slot)
        slot.fetching = prefetcher.submit(functools.partial(self._fetch_in_background, slot, prefer))

    def _fetch_in_background(self, slot: _Slot, prefer: int) -> None:
        try:
            allocation = allocate(
                slot.alias,
                slot.name,
                1,
                prefer=prefer,
                create=False,
                sqlite_lock_wait=SQLITE_BACKGROUND_LOCK_WAIT if slot.on_sqlite else None,
            )
        except Exception:
            # The next caller that runs out fetches in the foreground, where the error surfaces.
            with slot.lock:
                slot.fetching = False
                slot.stats.background_failures += 1
                slot.ready.notify_all()
            raise
        with slot.lock:
            slot.fetching = False
            slot.record(allocation)
            slot.stats.background_fetches += 1
            slot.pending = allocation.block
            slot.ready.notify_all()

    def _next_size(self, slot: _Slot) -> int:
        """The range size to ask for (0 means the row's step), aiming at STEP_TARGET_SECONDS per range.

        Ranges that go too fast grow toward what the target needs (at most 16 times per fetch, at
        least doubling, as Leaf does); ranges that last over twice the target halve. A fetch that
        lost a compare-and-set doubles the size too: fewer fetches are fewer collisions.
        """
        settings = app_settings()
        if not settings["ADAPTIVE_STEP"]:
            return 0
        size = slot.last - slot.first + 1
        used = slot.next - slot.first
        if size <= 0 or used <= 0:
            return slot.hint
        lasts = (time.monotonic() - slot.started) * size / used  # seconds this range lasts at the current pace
        target = settings["STEP_TARGET_SECONDS"]
        if lasts < target / 2:
            needed = size * target / lasts if lasts > 0 else size * 16
            hint = int(min(size * 16, max(size * 2, needed)))
        elif lasts > target * 2:
            hint = size // 2
        else:
            hint = size
        if slot.contended:
            hint = max(hint, size * 2)
        slot.hint = min(hint, settings["MAX_STEP"])
        # A little jitter, so processes that started together stop running out at the same moment.
        if size < slot.hint < settings["MAX_STEP"]:
            return int(slot.hint * random.uniform(0.8, 1.0))
        return slot.hint

    def _take_sqlite(self, slot: _Slot, count: int) -> range:
        connection = connections[slot.alias]
        if not in_sqlite_transaction(connection):
            with slot.lock:
                return self._take_locked(slot, count)
        # The caller's transaction may hold SQLite's only write lock, which a private connection would
        # wait for forever. Try one briefly; if it cannot write, allocate inside the caller's transaction.
        if slot.lock.acquire(timeout=SQLITE_SLOT_WAIT):
            try:
                if slot.remaining() < count:
                    # A block this transaction already took is used before the private connection is
                    # tried again: that try would wait for the lock this transaction holds, per number.
                    numbers = self._from_transaction_block(connection, slot, count)
                    if numbers is not None:
                        return numbers
                return self._take_locked(slot, count, in_sqlite_transaction=True)
            except (SequenceUnavailable, _StillFetching):
                pass
            finally:
                slot.lock.release()
        return self._take_in_transaction(connection, slot, count)

    def _from_transaction_block(self, connection: BaseDatabaseWrapper, slot: _Slot, count: int) -> range | None:
        with self._guard:
            blocks = self._in_transaction.get(connection)
        block = blocks.get(slot.name) if blocks else None
        if block is not None and block.alive(connection) and block.last - block.next + 1 >= count:
            first = block.next
            block.next += count
            slot.stats.handed_out += count
            return range(first, first + count)
        return None

    def _take_in_transaction(self, connection: BaseDatabaseWrapper, slot: _Slot, count: int) -> range:
        numbers = self._from_transaction_block(connection, slot, count)
        if numbers is not None:
            return numbers
        with self._guard:
            blocks = self._in_transaction.setdefault(connection, {})
        allocation = allocate_in_transaction(connection, slot.alias, slot.name, count)
        slot.record(allocation)
        slot.stats.foreground_fetches += 1
        slot.stats.fetched_in_caller_transaction += 1
        slot.stats.handed_out += count
        first = allocation.block.first
        if not connection.in_atomic_block:
            return range(first, first + count)  # manual transaction: no commit hook, so nothing is kept
        block = _TransactionBlock(first + count, allocation.block.last)
        block.callback = functools.partial(self._adopt, slot, block, blocks)
        blocks[slot.name] = block
        transaction.on_commit(block.callback, using=slot.alias)
        return range(first, first + count)

    def _adopt(self, slot: _Slot, block: _TransactionBlock, blocks: dict[str, _TransactionBlock]) -> None:
        """After commit the block is durable: its rest becomes the process's cached range if that is empty."""
        block.committed = True
        if blocks.get(slot.name) is block:
            del blocks[slot.name]
        if self._slots.get((slot.alias, slot.name)) is not slot:
            return  # cleared or forked since
        with slot.lock:
            if slot.next > slot.last and block.next <= block.last:
                self._set_range(slot, Block(block.next, block.last), 0)
                block.next = block.last + 1


ranges = RangeCache()
os.register_at_fork(after_in_child=ranges._reset)
