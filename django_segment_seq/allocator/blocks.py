"""Pure arithmetic of the next block after a stored value: limits, wrap-around and exhaustion."""

from __future__ import annotations

from typing import NamedTuple

from django_segment_seq.db.columns import BIGINT_MIN
from django_segment_seq.db.history import same_history
from django_segment_seq.exceptions import SequenceExhausted, SequenceMisconfigured


class Row(NamedTuple):
    """The columns of a Sequence row that decide the next block."""

    value: int
    step: int
    min_value: int
    max_value: int
    cycle: bool
    # Moved by every write: the compare-and-set checks it, so no write is ever mistaken for none.
    version: int = 0
    # The server history and table identity of the last write ("" before any): see failover_skip().
    history: str = ""
    # The identity of the table the row was read from now (db/identity.py; "" where it cannot be read).
    table: str = ""


class Block(NamedTuple):
    """An inclusive block of numbers [first, last] that now belongs to one caller."""

    first: int
    last: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1


def check_row(name: str, row: Row) -> None:
    """Refuse rows whose limits contradict each other, whatever wrote them."""
    if row.step < 1:
        raise SequenceMisconfigured(name, f"step is {row.step}, it must be at least 1")
    if row.min_value > row.max_value:
        raise SequenceMisconfigured(name, f"min_value {row.min_value} is greater than max_value {row.max_value}")
    if row.min_value <= BIGINT_MIN:
        raise SequenceMisconfigured(name, f"min_value must be greater than {BIGINT_MIN}")
    if row.value > row.max_value:
        # Only a write around validation can do this; wrapping or stopping would both hide it.
        raise SequenceMisconfigured(
            name, f"value {row.value} is above max_value {row.max_value}; set max_value to at least the value"
        )


def failover_skip(row: Row, history: str, skip: int) -> int:
    """How far past its value a row is moved before its next block: `skip` when it was last written on another
    server history than `history`, or in another table (a failover, or a restore that re-created the table,
    happened since), else 0.

    After an asynchronous failover or a restore the row can stand behind numbers handed out before; skipping
    more than were handed out since keeps them from coming again. A row with fewer than twice `skip` numbers
    left skips half of them, so a capped row (a daily flow number) still has numbers after a failover.
    """
    if not row.history or not history or same_history(row.history, history):
        return 0
    return capped_skip(row, skip)


def capped_skip(row: Row, skip: int) -> int:
    """`skip`, or half the numbers the row has left when it has fewer than twice `skip`."""
    left = row.max_value - max(row.value, row.min_value - 1)
    return max(0, min(skip, left // 2))


def restore_skip(row: Row, highest: int, skip: int) -> int:
    """How far past its value a row found behind this process's last write (restored) is moved: `skip` (capped
    as failover_skip() caps it), and at least past `highest`, the highest number this process ever held of it."""
    if row.cycle:
        return capped_skip(row, skip)
    left = row.max_value - max(row.value, row.min_value - 1)
    return max(capped_skip(row, skip), min(highest - row.value, left))


def next_block(name: str, row: Row, wanted: int = 1, prefer: int = 0, skip: int = 0) -> Block:
    """The block after row.value of max(step, wanted, prefer) numbers, never crossing max_value.

    At least `wanted` numbers are guaranteed; a shorter block is allowed only at the top of the
    range. `prefer` is the adaptive size a process asks for; the row's step stays the floor. A cycling
    row ignores it: larger blocks would leave larger gaps and bring the next repeat of a number sooner.
    Past max_value the block wraps to min_value when cycle is on. `skip` numbers after the value are left out
    (failover_skip()).
    """
    if wanted < 1:
        raise ValueError(f"Sequence {name!r}: the count must be at least 1, not {wanted}")
    check_row(name, row)
    size = max(row.step, wanted, 0 if row.cycle else prefer)
    first = max(row.value + 1 + skip, row.min_value)
    left = row.max_value - first + 1
    if left < wanted:
        if not row.cycle:
            raise SequenceExhausted(name, row.max_value, wanted=wanted, left=max(left, 0))
        span = row.max_value - row.min_value + 1
        if span < wanted:
            raise SequenceMisconfigured(
                name, f"{wanted} contiguous numbers were asked for but the whole range holds {span}"
            )
        first = row.min_value
    return Block(first, min(first + size - 1, row.max_value))


class Unused(NamedTuple):
    """Numbers [first, value] a process never handed out, ending the row's write that left it at (value, version)."""

    first: int
    value: int
    version: int


def unused_run(
    next_number: int, current: Block, version: int | None, pending: Block | None, pending_version: int | None
) -> Unused | None:
    """What a process may give back: the unused rest of its current block and of a prefetched one, when safe.

    Only numbers that end the row's latest write can go back, so a pending block goes back alone
    unless it was the very next write after the current block (version + 1): then both go back
    from the current block's first unused number, also when the pending block wrapped around.
    """
    current_left = version is not None and current.first <= next_number <= current.last
    if pending is not None and pending_version is not None:
        follows = current_left and version is not None and pending_version == version + 1
        return Unused(next_number if follows else pending.first, pending.last, pending_version)
    if current_left and version is not None:
        return Unused(next_number, current.last, version)
    return None
