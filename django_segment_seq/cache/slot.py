"""One sequence's cached range in this process: its numbers, its prefetched successor, its figures, and what
a fetch that found the row held elsewhere left for the callers that waited for it."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from django_segment_seq.allocator.attempts import RowBusy
from django_segment_seq.allocator.blocks import Block
from django_segment_seq.allocator.request import Allocation, FetchProgress
from django_segment_seq.cache import events
from django_segment_seq.cache.events import Fetch
from django_segment_seq.cache.stats import SequenceStats
from django_segment_seq.exceptions import SequenceUnavailable

__all__ = ["Slot", "note_held"]


class Slot:
    """The cached range [first, last] of one sequence in this process, its prefetched successor and its figures."""

    __slots__ = (
        "alias",
        "completed",
        "contended",
        "fetching",
        "first",
        "held",
        "held_at",
        "hint",
        "last",
        "lock",
        "name",
        "next",
        "on_sqlite",
        "pending",
        "pending_version",
        "progress",
        "ready",
        "started",
        "stats",
        "trigger",
        "version",
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
        # The row's version right after the current and the pending block were taken: what a give-back checks.
        self.version: int | None = None
        self.pending_version: int | None = None
        self.fetching = False
        # What the running (or latest) background fetch shows its waiters: whether it waits out a held row.
        self.progress = FetchProgress()
        # The latest fetch that found the row held by another transaction for LOCK_TIMEOUT, and when it ended:
        # callers that arrived before then have waited as long already, and hear it instead of waiting again.
        self.held: BaseException | None = None
        self.held_at = 0.0
        self.hint = 0  # the adaptive size asked for last; 0 means the row's step
        self.completed: tuple[int, float] | None = None  # (size, seconds) of the latest range used up
        self.contended = False  # the latest fetch lost a compare-and-set
        self.on_sqlite = on_sqlite
        # handed_out here counts numbers of earlier ranges; the current range's are next - first.
        self.stats = SequenceStats()

    def remaining(self) -> int:
        return self.last - self.next + 1

    def record(self, allocation: Allocation) -> None:
        self.stats.ranges_fetched += 1
        self.stats.retries += allocation.retries
        self.stats.failures += allocation.failures
        self.stats.busy += allocation.busy
        self.stats.round_trips += allocation.round_trips
        self.stats.row_step = allocation.step
        self.stats.add_tier_figures(allocation)
        self.contended = allocation.retries > 0

    def fetched(self, allocation: Allocation, *, background: bool = False) -> None:
        """Tell the listeners that a block was taken and its figures recorded here."""
        events.emit(Fetch(self.alias, self.name, self, self.snapshot(), allocation, background))

    def fetch_failed(self, error: BaseException) -> None:
        """Tell the listeners that a background fetch failed: the next caller that runs out fetches itself."""
        events.emit(Fetch(self.alias, self.name, self, self.snapshot(), None, True, error))

    def snapshot(self) -> SequenceStats:
        stats = replace(self.stats)
        stats.handed_out += self.next - self.first
        stats.step = self.last - self.first + 1 if self.last >= self.first else stats.step
        return stats


def note_held(slot: Slot, exc: BaseException) -> None:
    """Keep a fetch's failure on the slot (its lock held) when it was the row held elsewhere for LOCK_TIMEOUT."""
    if isinstance(exc, SequenceUnavailable) and isinstance(exc.__cause__, RowBusy):
        slot.held, slot.held_at = exc, time.monotonic()
