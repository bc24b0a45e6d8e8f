"""Per-process cached ranges: numbers come from memory under one short lock, the database is asked once per range.

Keyed by (database alias, sequence name). With prefetch on, the next range is fetched in the
background once a share of the current one is used, so callers seldom wait for the database; with
the adaptive step, ranges grow under heavy demand and shrink under light demand (see sizing). A
block taken inside the caller's transaction (see allocator) is kept apart and used only while that
transaction stands. Cleared in a child after fork(), so a child never hands out its parent's numbers.
"""

from __future__ import annotations

import functools
import os
import random
import threading
import time
from typing import Any

from django.core.signals import setting_changed
from django.db import connections
from django.dispatch import receiver

from django_segment_seq.allocator import callers, seen
from django_segment_seq.allocator.blocks import Block, Unused, unused_run
from django_segment_seq.allocator.request import Allocation, BlockRequest, FetchProgress
from django_segment_seq.allocator.source import BlockSource
from django_segment_seq.cache.events import Fetch
from django_segment_seq.cache.prefetch import prefetcher
from django_segment_seq.cache.sizing import next_size
from django_segment_seq.cache.slot import Slot, note_held
from django_segment_seq.cache.sources import tiered
from django_segment_seq.cache.stats import SequenceStats
from django_segment_seq.conf import SETTING_NAME, app_settings
from django_segment_seq.db import sqlite
from django_segment_seq.db.rownames import require_valid_name
from django_segment_seq.exceptions import SequenceUnavailable

# Seconds beyond one back-off (MAX_BACKOFF) for a fetch past its own deadline to send its last short statement.
VERDICT_MARGIN = 0.25


class RangeCache:
    """All cached ranges of this process."""

    def __init__(self, source: BlockSource = tiered) -> None:
        self.source = source  # where blocks come from: the table, or Redis for the rows on its tier
        self._reset()

    def _reset(self) -> None:
        # Emptied in place, never replaced: api.next_value holds references to these dicts.
        if hasattr(self, "_slots"):
            self._slots.clear()
            self.by_name.clear()
        else:
            self._slots: dict[tuple[str, str], Slot] = {}
            # The slots of the one alias next_value() uses without being told (see api), by name alone.
            self.by_name: dict[str, Slot] = {}
        self._guard = threading.Lock()
        self._pid = os.getpid()
        seen.forget()  # rows may be deleted or reset on purpose now: what was seen of them says nothing

    def take(self, alias: str, name: str) -> int:
        """One number; the hot path is a dict lookup and one short lock."""
        slot = self._slots.get((alias, name)) or self._add_slot(alias, name)
        if slot.on_sqlite and callers.known_to_hold(connections[alias], name):
            return self._take_holding_write_lock(slot, 1)[0]
        arrived = time.monotonic()
        with slot.lock:
            number = slot.next
            if number < slot.trigger:
                slot.next = number + 1
                return number
            return self._take_locked(slot, 1, arrived)[0]

    def take_many(self, alias: str, name: str, count: int) -> range:
        """`count` contiguous numbers: from the cached range if it holds them, else from one new block."""
        if count < 1:
            raise ValueError(f"Sequence {name!r}: the count must be at least 1, not {count}")
        slot = self._slots.get((alias, name)) or self._add_slot(alias, name)
        if slot.on_sqlite and callers.known_to_hold(connections[alias], name):
            return self._take_holding_write_lock(slot, count)
        arrived = time.monotonic()
        with slot.lock:
            return self._take_locked(slot, count, arrived)

    def take_cached(self, alias: str, name: str, count: int = 1) -> range | None:
        """`count` numbers from the current range, or None: never fetches or waits for the lock.

        For callers that may not block (an event loop): None sends them to take() on a thread. The range's prefetch
        point starts the background fetch here (a thread started, not waited for), as take() would: sending that
        caller to a thread instead sent every caller in flight to one until the first started it.
        """
        slot = self._slots.get((alias, name))
        if slot is None or not slot.lock.acquire(False):
            return None
        try:
            first = slot.next
            if first + count > slot.trigger:
                if slot.remaining() < count:
                    return None  # a range to switch or fetch: the slow path
                self._start_prefetch(slot)
            slot.next = first + count
            return range(first, first + count)
        finally:
            slot.lock.release()

    def index_by_name(self, alias: str, name: str) -> None:
        """Let next_value() find the sequence's slot by name alone: for the one alias it uses without being told."""
        slot = self._slots.get((alias, name))
        if slot is not None:
            self.by_name[name] = slot

    def is_empty(self) -> bool:
        """Whether this process has taken no range since it started or last cleared the cache."""
        return not self._slots

    def stats(self) -> dict[tuple[str, str], SequenceStats]:
        """A copy of every sequence's figures in this process, keyed by (alias, name)."""
        return {(event.alias, event.name): event.stats for event in self.current()}

    def current(self) -> list[Fetch]:
        """Every sequence's figures in this process now, as fetch-less events: for listeners that catch up (at exit)."""
        result = []
        for slot in list(self._slots.values()):
            # A foreground fetch holds the lock during its round trip; don't let monitoring wait long for it.
            locked = slot.lock.acquire(timeout=0.1)
            try:
                result.append(Fetch(slot.alias, slot.name, slot, slot.snapshot()))
            finally:
                if locked:
                    slot.lock.release()
        return result

    def clear(self) -> None:
        """Forget every cached range (their numbers become gaps); for tests and after deleting rows.

        Background fetches still running are waited for first (within a bound), so none lands after
        the caller has, say, emptied the Sequence table.
        """
        prefetcher.drain(timeout=30)
        self._reset()

    def surrender(self, wait: float) -> list[tuple[str, str, Unused]]:
        """Empty every cached range and prefetched block, returning what may be given back to each row.

        Each slot is emptied under its lock, so no number of what is returned can be handed out
        afterwards: the next take fetches a new block. A slot whose lock is not free within `wait`
        seconds is left as it is. Nothing in a fork child: its parent's ranges were never its own.
        """
        if self._pid != os.getpid():
            return []
        runs = []
        for (alias, name), slot in list(self._slots.items()):
            if not slot.lock.acquire(timeout=wait):
                continue
            try:
                current = Block(slot.first, slot.last)
                run = unused_run(slot.next, current, slot.version, slot.pending, slot.pending_version)
                slot.stats.handed_out += slot.next - slot.first
                if slot.last >= slot.first:
                    slot.stats.step = slot.last - slot.first + 1
                # Empty as a new slot is: the next take fetches, and the adaptive step sees no range used up.
                slot.first, slot.next, slot.last, slot.trigger = 1, 1, 0, 1
                slot.pending = slot.version = slot.pending_version = None
            finally:
                slot.lock.release()
            if run is not None:
                runs.append((alias, name, run))
        return runs

    def discard(self, alias: str, name: str) -> None:
        """Forget one sequence's cached range (its unused numbers become a gap), to bound a process's memory.

        A thread that already holds the slot may still hand out its numbers: the next caller gets a new slot,
        which takes a new block from the row, so no number is handed out twice.
        """
        with self._guard:
            slot = self._slots.pop((alias, name), None)
            if slot is not None and self.by_name.get(name) is slot:
                del self.by_name[name]

    def _add_slot(self, alias: str, name: str) -> Slot:
        require_valid_name(name)
        on_sqlite = connections[alias].vendor == "sqlite"
        with self._guard:
            return self._slots.setdefault((alias, name), Slot(alias, name, on_sqlite))

    def _take_locked(self, slot: Slot, count: int, arrived: float) -> range:
        """The slow path, with slot.lock held: start a prefetch, switch to the prefetched range, or fetch.

        A caller that `arrived` before a fetch found the row held (while it waited for the slot's lock or for that
        fetch) gets SequenceUnavailable at once: its own fetch would wait LOCK_TIMEOUT again.
        """
        waited = False
        wait_until = 0.0
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
                self._set_range(slot, pending, 0, slot.pending_version, asked=count)
                continue
            if slot.fetching:
                if not waited:
                    slot.stats.waits_for_background += 1
                    waited = True
                    wait_until = time.monotonic() + app_settings()["LOCK_TIMEOUT"] + self._verdict_grace()
                if self._wait_for_background(slot, wait_until):
                    continue
                return self._refill(slot, count)  # slow, not stuck: the caller takes part with a fetch of its own
            if slot.held is not None and slot.held_at >= arrived:
                raise SequenceUnavailable(slot.name, slot.alias, 1, slot.held)
            return self._refill(slot, count)

    def _wait_for_background(self, slot: Slot, wait_until: float) -> bool:
        """Wait (slot.lock held) for the running background fetch; False once it is slow rather than stuck.

        It is waited for until `wait_until` (one lock wait and a grace), and while it waits out a row held by another
        transaction, until its verdict is due: that fetch then ends with the row found held, and the caller hears it
        at once. A fetch still running past both is losing races or short of CPU (even its verdict can be late on a
        starved machine): the caller's own fetch is as likely to succeed, so it takes part rather than be refused.
        """
        held_until = slot.progress.held_until
        until = wait_until if held_until is None else max(wait_until, held_until + self._verdict_grace())
        left = until - time.monotonic()
        if left <= 0:
            return False
        slot.ready.wait(left)
        return True

    @staticmethod
    def _verdict_grace() -> float:
        """How long after its own deadline a fetch may still take to end: one back-off and one short statement."""
        return float(app_settings()["MAX_BACKOFF"]) + VERDICT_MARGIN

    def _take_holding_write_lock(self, slot: Slot, count: int) -> range:
        """SQLite, caller's transaction holding the write lock: never wait for a thread that may wait for that lock."""
        if not slot.lock.acquire(timeout=sqlite.SLOT_WAIT):
            return self._provisional(slot, count)
        try:
            if slot.remaining() >= count:
                first = slot.next
                slot.next = first + count
                return range(first, first + count)
            return self._refill(slot, count)
        finally:
            slot.lock.release()

    def _refill(self, slot: Slot, wanted: int) -> range:
        """A new block of at least max(step, wanted); returns its first `wanted` numbers and caches the rest."""
        try:
            prefer = self._next_size(slot, asked=wanted)
            allocation = self.source.allocate(BlockRequest(slot.alias, slot.name, wanted, prefer=prefer))
        except SequenceUnavailable as exc:
            note_held(slot, exc)
            raise
        slot.record(allocation)
        slot.stats.foreground_fetches += 1
        slot.fetched(allocation)
        block = allocation.block
        if allocation.provisional:
            return self._hand_out_provisional(slot, allocation)
        if block.size > wanted or slot.next > slot.last:
            self._set_range(slot, block, wanted, allocation.version, asked=wanted)
            if slot.next >= slot.trigger:
                self._start_prefetch(slot)
        else:
            slot.stats.handed_out += wanted
        return range(block.first, block.first + wanted)

    def _hand_out_provisional(self, slot: Slot, allocation: Allocation) -> range:
        """Hand out a block taken in the caller's transaction, exactly the numbers asked for, none kept.

        The caller's transaction may undo it (a rollback, a raw ROLLBACK TO SAVEPOINT the app cannot see), so no
        rest of it is ever cached: the next number there is taken from the row afresh, inside that transaction.
        """
        block = allocation.block
        slot.stats.fetched_in_caller_transaction += 1
        slot.stats.handed_out += block.size
        return range(block.first, block.last + 1)

    def _provisional(self, slot: Slot, count: int) -> range:
        """Numbers for a caller that may not wait for the slot: a new block inside its transaction."""
        allocation = self.source.allocate(BlockRequest(slot.alias, slot.name, count))
        slot.record(allocation)  # without the slot's lock: figures only, read as approximate
        slot.stats.foreground_fetches += 1
        slot.fetched(allocation)
        return self._hand_out_provisional(slot, allocation)

    def _set_range(self, slot: Slot, block: Block, taken: int, version: int | None, *, asked: int) -> None:
        """Make `block` the current range (its first `taken` numbers already handed out); the old rest is a gap.

        `version` is the row's version right after the block was taken (None: never to be given back); `asked`, the
        count that the old range could not hold, which makes it a range used up (see used_up()).
        """
        now = time.monotonic()
        if used_up(slot, asked):
            slot.completed = (slot.last - slot.first + 1, now - slot.started)
        slot.stats.handed_out += slot.next - slot.first
        slot.first = block.first
        slot.next = block.first + taken
        slot.last = block.last
        slot.version = version
        slot.started = now
        slot.trigger = slot.last + 1
        if self._prefetch_on(slot) and slot.pending is None and not slot.fetching:
            # Jitter the point a little, so processes that started together drift apart.
            share = app_settings()["PREFETCH_AT"] * random.uniform(0.75, 1.25)
            slot.trigger = min(slot.last + 1, slot.first + int(block.size * share))

    @staticmethod
    def _prefetch_on(slot: Slot) -> bool:
        return bool(app_settings()["PREFETCH"]) and (not slot.on_sqlite or sqlite.prefetch_allowed(slot.alias))

    def _start_prefetch(self, slot: Slot) -> None:
        """Start a background fetch of the next range, once per range; a failed one is not retried here."""
        slot.trigger = slot.last + 1  # the hot path serves the rest of the range
        if slot.pending is not None or slot.fetching or not self._prefetch_on(slot):
            return
        prefer = self._next_size(slot)
        slot.progress = FetchProgress()
        fetch = functools.partial(self._fetch_in_background, slot, prefer, slot.progress)
        slot.fetching = prefetcher.submit(fetch)

    def _fetch_in_background(self, slot: Slot, prefer: int, progress: FetchProgress) -> None:
        try:
            request = BlockRequest(
                slot.alias, slot.name, 1, prefer=prefer, create=False, background=True, progress=progress
            )
            allocation = self.source.allocate(request)
        except Exception as exc:
            # The next caller that runs out fetches in the foreground, where the error surfaces.
            with slot.lock:
                slot.fetching = False
                note_held(slot, exc)
                slot.stats.background_failures += 1
                slot.ready.notify_all()
                slot.fetch_failed(exc)
            raise
        with slot.lock:
            slot.fetching = False
            slot.record(allocation)
            slot.stats.background_fetches += 1
            slot.fetched(allocation, background=True)
            if slot.pending is None:
                slot.pending = allocation.block
                slot.pending_version = allocation.version
            # else a caller fetched itself meanwhile: this block is a gap
            slot.ready.notify_all()

    def _next_size(self, slot: Slot, *, asked: int = 1) -> int:
        """The range size to ask for (0 means the row's step), for a caller of `asked` numbers (1: a prefetch); see
        sizing.next_size for the rule."""
        settings = app_settings()
        if not settings["ADAPTIVE_STEP"]:
            return 0
        completed = slot.completed
        if used_up(slot, asked):
            completed = (slot.last - slot.first + 1, time.monotonic() - slot.started)  # the range just used up
        size = slot.last - slot.first + 1
        slot.hint = next_size(
            slot.hint,
            completed,
            contended=slot.contended,
            target=settings["STEP_TARGET_SECONDS"],
            max_step=settings["MAX_STEP"],
        )
        # A little jitter, so processes that started together stop running out at the same moment.
        if size < slot.hint < settings["MAX_STEP"]:
            return int(slot.hint * random.uniform(0.8, 1.0))
        return slot.hint


def used_up(slot: Slot, asked: int) -> bool:
    """Whether the current range is used up for a caller of `asked` numbers: what is left of it cannot hold them.

    A caller of blocks leaves a rest smaller than its block behind (a gap); counting only ranges emptied to their last
    number, the adaptive step would never see one used up by such a caller, and never grow for it.
    """
    return slot.last >= slot.first and slot.remaining() < asked


ranges = RangeCache()
os.register_at_fork(after_in_child=ranges._reset)


@receiver(setting_changed)
def _forget_slots_by_name(*, setting: str, **kwargs: Any) -> None:
    """The alias calls without `using` resolve to may have changed."""
    if setting in (SETTING_NAME, "DATABASE_ROUTERS"):
        ranges.by_name.clear()
