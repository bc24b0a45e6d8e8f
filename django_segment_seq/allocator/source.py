"""Where the cache's blocks come from, as one seam: the BlockSource protocol, the Sequence table's source, and a
source in memory for tests of what sits above it. The Redis tier's source (redistier/source.py) is the third."""

from __future__ import annotations

import threading
from typing import Protocol

from django_segment_seq.allocator import loop
from django_segment_seq.allocator.blocks import Block
from django_segment_seq.allocator.request import Allocation, BlockRequest

__all__ = ["BlockSource", "MemorySource", "TableSource"]


class BlockSource(Protocol):
    """Hands out a block the caller then owns: the same request and result whatever stands behind it."""

    def allocate(self, request: BlockRequest) -> Allocation:
        """At least `wanted` numbers (about `prefer`, 0 meaning the row's step) of the request's row."""
        ...


class TableSource:
    """Blocks taken from the Sequence table by compare-and-set (allocator.loop), with its retries, bounds and
    fences, each committed where the caller can keep it."""

    allocate = staticmethod(loop.allocate)


class MemorySource:
    """Blocks counted up in this process's memory, no database: for tests of the cache and what uses it."""

    def __init__(self, step: int = 100) -> None:
        self.step = step
        self._tops: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def allocate(self, request: BlockRequest) -> Allocation:
        """The next `max(wanted, prefer or step)` numbers of the row, which starts at 1 when first asked for."""
        size = max(request.wanted, request.prefer or self.step)
        row = (request.alias, request.name)
        with self._lock:
            first = self._tops.get(row, 0) + 1
            self._tops[row] = first + size - 1
        return Allocation(block=Block(first, first + size - 1), step=self.step)
