"""What is asked of a block source and what it answers: one BlockRequest made where a range is wanted, carried
unchanged through every source, retry and attempt, and the Allocation that comes back."""

from __future__ import annotations

from dataclasses import dataclass, replace

from django_segment_seq.allocator.blocks import Block, Row
from django_segment_seq.allocator.tier_figures import TierFigures

__all__ = ["Allocation", "BlockRequest", "FetchProgress"]


class FetchProgress:
    """What a running fetch shows the callers that wait for it: a fetch waiting out a row held by another transaction
    says until when (its verdict is then near), one without that is making progress (lost races, a slow machine)."""

    __slots__ = ("held_until",)

    def __init__(self) -> None:
        # The monotonic instant at which the fetch gives up on a row held elsewhere; None while the row is not held.
        self.held_until: float | None = None


@dataclass(frozen=True, slots=True)
class BlockRequest:
    """A block of row `name` in database `alias`: frozen, so a source that passes it on cannot change the ask."""

    alias: str
    name: str
    # At least this many numbers, contiguous.
    wanted: int = 1
    # About this many (the adaptive size); 0 means the row's step, which stays the floor.
    prefer: int = 0
    # Whether a missing row may be made (CREATE_ON_FIRST_USE still decides how).
    create: bool = True
    # A prefetch: on a private connection, never inside the caller's transaction.
    background: bool = False
    # Where the fetch shows whether it waits out a held row, for callers that wait for it (the cache's prefetch).
    progress: FetchProgress | None = None

    def preferring(self, prefer: int) -> BlockRequest:
        """The same request for about `prefer` numbers (a super-segment for Redis, or a smaller one from the table)."""
        return replace(self, prefer=prefer)


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
