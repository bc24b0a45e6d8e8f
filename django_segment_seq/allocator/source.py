"""Where the cache's blocks come from, as one seam: the BlockSource protocol, the Sequence table's source, and a
source in memory for tests of what sits above it. The Redis tier's source (redistier/source.py) is the third."""

from __future__ import annotations

import threading
from typing import Protocol

from django_segment_seq.allocator import loop
from django_segment_seq.allocator.blocks import Block
from django_segment_seq.allocator.loop import Allocation

__all__ = ["BlockSource", "MemorySource", "TableSource"]


class BlockSource(Protocol):
    """Hands out a block the caller then owns: the same arguments and result whatever stands behind it."""

    def allocate(
        self,
        alias: str,
        name: str,
        wanted: int = 1,
        *,
        prefer: int = 0,
        create: bool = True,
        background: bool = False,
    ) -> Allocation:
        """At least `wanted` numbers (about `prefer`, 0 meaning the row's step) of the row `name` in `alias`."""
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

    def allocate(
        self,
        alias: str,
        name: str,
        wanted: int = 1,
        *,
        prefer: int = 0,
        create: bool = True,
        background: bool = False,
    ) -> Allocation:
        """The next `max(wanted, prefer or step)` numbers of the row, which starts at 1 when first asked for."""
        size = max(wanted, prefer or self.step)
        with self._lock:
            first = self._tops.get((alias, name), 0) + 1
            self._tops[(alias, name)] = first + size - 1
        return Allocation(block=Block(first, first + size - 1), step=self.step)
