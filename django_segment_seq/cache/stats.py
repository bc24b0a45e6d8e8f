"""The figures one process keeps per sequence: what sequence_stats() returns, benchmarks and monitoring read."""

from __future__ import annotations

from dataclasses import dataclass

from django_segment_seq.allocator.request import Allocation

# The Redis tier's figures (docs/redis.md): blocks taken from Redis, super-segments installed, states made by
# another server process dropped, super-segments abandoned after an unclear INSTALL, blocks taken from the
# table because Redis failed.
TIER_FIGURES = ("redis_takes", "redis_refills", "redis_fenced", "redis_abandoned", "redis_fallbacks")


@dataclass(slots=True)
class SequenceStats:
    """What one process did for one sequence: the figures benchmarks and monitoring read."""

    handed_out: int = 0
    ranges_fetched: int = 0
    # Fetches a caller ran itself and waited for (the first one, after a failed prefetch, prefetch off).
    foreground_fetches: int = 0
    # Fetches run in the background while callers kept taking numbers from memory.
    background_fetches: int = 0
    background_failures: int = 0
    # Callers that ran out while a background fetch was still in flight, and waited for it.
    waits_for_background: int = 0
    retries: int = 0
    failures: int = 0
    # Attempts that found the row held by another transaction.
    busy: int = 0
    # Statements the allocations sent: reads, compare-and-sets and row creations.
    round_trips: int = 0
    # Size of the latest range (the adaptive step), and the row's own step at that fetch.
    step: int = 0
    row_step: int = 0
    # Blocks taken inside the caller's transaction, because that transaction held the row or SQLite's write lock.
    fetched_in_caller_transaction: int = 0
    redis_takes: int = 0
    redis_refills: int = 0
    redis_fenced: int = 0
    redis_abandoned: int = 0
    redis_fallbacks: int = 0

    def add_tier_figures(self, allocation: Allocation) -> None:
        """Add up what the Redis tier did for one fetch (nothing for a row off the tier)."""
        figures = allocation.tier
        if figures is not None:
            self.redis_takes += figures.takes
            self.redis_refills += figures.refills
            self.redis_fenced += figures.fenced
            self.redis_abandoned += figures.abandoned
            self.redis_fallbacks += figures.fallbacks

    @property
    def blocking_fetches(self) -> int:
        """Times a caller had to wait for the database: the figure prefetch exists to keep at zero."""
        return self.foreground_fetches + self.waits_for_background
