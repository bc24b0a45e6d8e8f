"""Per-process cached ranges: numbers come from memory under one short lock, the database is asked once per range.

Keyed by (database alias, sequence name). Cleared in a child after fork(), so a child never hands
out its parent's cached numbers.
"""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass, replace
from weakref import WeakKeyDictionary

from django.core.exceptions import ValidationError
from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from .allocator import Allocation, allocate, allocate_in_transaction
from .exceptions import SequenceUnavailable

# How long a caller inside a SQLite transaction waits for a thread that may be blocked on its write lock.
SQLITE_SLOT_WAIT = 0.05
# How long it waits for SQLite's write lock on a private connection before concluding that it holds it itself.
SQLITE_LOCK_WAIT = 0.1


@dataclass(slots=True)
class SequenceStats:
    """What one process did for one sequence: the figures benchmarks and monitoring read."""

    handed_out: int = 0
    ranges_fetched: int = 0
    retries: int = 0
    failures: int = 0
    step: int = 0
    # SQLite only: blocks taken inside the caller's transaction because it held the write lock.
    fetched_in_caller_transaction: int = 0


class _Slot:
    """The cached range [next, last] of one sequence in this process."""

    __slots__ = ("alias", "name", "lock", "next", "last", "on_sqlite", "stats")

    def __init__(self, alias: str, name: str, on_sqlite: bool) -> None:
        self.alias = alias
        self.name = name
        self.lock = threading.Lock()
        self.next = 1
        self.last = 0
        self.on_sqlite = on_sqlite
        self.stats = SequenceStats()

    def hand_out(self, count: int) -> range:
        first = self.next
        self.next = first + count
        self.stats.handed_out += count
        return range(first, first + count)

    def remaining(self) -> int:
        return self.last - self.next + 1

    def record(self, allocation: Allocation) -> None:
        self.stats.ranges_fetched += 1
        self.stats.retries += allocation.conflicts
        self.stats.failures += allocation.failures
        self.stats.step = allocation.step


class _TransactionBlock:
    """Numbers allocated inside a caller's SQLite transaction, usable only while that allocation is not rolled back."""

    __slots__ = ("next", "last", "committed", "callback")

    def __init__(self, first: int, last: int) -> None:
        self.next = first
        self.last = last
        self.committed = False
        self.callback = None

    def alive(self, connection: BaseDatabaseWrapper) -> bool:
        # Django drops on_commit callbacks of rolled-back savepoints and transactions together with
        # their writes, so a callback still queued means the allocating UPDATE still stands.
        return self.committed or any(func is self.callback for _, func, _ in connection.run_on_commit)


class RangeCache:
    """All cached ranges of this process."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._slots: dict[tuple[str, str], _Slot] = {}
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
            if number > slot.last:
                number = self._refill(slot, 1)[0]
            else:
                slot.next = number + 1
            slot.stats.handed_out += 1
            return number

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
        return {key: replace(slot.stats) for key, slot in self._slots.items()}

    def clear(self) -> None:
        """Forget every cached range (their numbers become gaps); for tests and after deleting rows."""
        self._reset()

    def _add_slot(self, alias: str, name: str) -> _Slot:
        from .models import validate_sequence_name

        try:
            validate_sequence_name(name)
        except ValidationError as exc:
            raise ValueError(" ".join(exc.messages)) from None
        on_sqlite = connections[alias].vendor == "sqlite"
        with self._guard:
            return self._slots.setdefault((alias, name), _Slot(alias, name, on_sqlite))

    def _refill(self, slot: _Slot, wanted: int, sqlite_lock_wait: float | None = None) -> range:
        """A new block of max(step, wanted); returns its first `wanted` numbers' span and caches the rest."""
        allocation = allocate(slot.alias, slot.name, wanted, sqlite_lock_wait=sqlite_lock_wait)
        slot.record(allocation)
        block = allocation.block
        if block.size > wanted or slot.next > slot.last:
            slot.next, slot.last = block.first + wanted, block.last
        return range(block.first, block.first + wanted)

    def _take_locked(self, slot: _Slot, count: int) -> range:
        if slot.remaining() >= count:
            return slot.hand_out(count)
        numbers = self._refill(slot, count)
        slot.stats.handed_out += count
        return numbers

    def _take_sqlite(self, slot: _Slot, count: int) -> range:
        connection = connections[slot.alias]
        if not _in_sqlite_transaction(connection):
            with slot.lock:
                return self._take_locked(slot, count)
        # The caller's transaction may hold SQLite's only write lock, which a private connection would
        # wait for forever. Try one briefly; if it cannot write, allocate inside the caller's transaction.
        if slot.lock.acquire(timeout=SQLITE_SLOT_WAIT):
            try:
                if slot.remaining() >= count:
                    return slot.hand_out(count)
                numbers = self._refill(slot, count, sqlite_lock_wait=SQLITE_LOCK_WAIT)
                slot.stats.handed_out += count
                return numbers
            except SequenceUnavailable:
                pass
            finally:
                slot.lock.release()
        return self._take_in_transaction(connection, slot, count)

    def _take_in_transaction(self, connection: BaseDatabaseWrapper, slot: _Slot, count: int) -> range:
        with self._guard:
            blocks = self._in_transaction.setdefault(connection, {})
        block = blocks.get(slot.name)
        if block is not None and block.alive(connection) and block.last - block.next + 1 >= count:
            first = block.next
            block.next += count
            slot.stats.handed_out += count
            return range(first, first + count)
        allocation = allocate_in_transaction(connection, slot.alias, slot.name, count)
        slot.record(allocation)
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
                slot.next, slot.last = block.next, block.last
                block.next = block.last + 1


def _in_sqlite_transaction(connection: BaseDatabaseWrapper) -> bool:
    raw = connection.connection
    return connection.in_atomic_block or (raw is not None and raw.in_transaction)


ranges = RangeCache()
os.register_at_fork(after_in_child=ranges._reset)
