"""The adaptive range size: grow only on evidence that a whole range went by too fast, as Leaf does."""

from __future__ import annotations


def next_size(
    previous: int,
    completed: tuple[int, float] | None,
    *,
    contended: bool,
    target: float,
    max_step: int,
) -> int:
    """The range size to ask for next (0 means the row's step, which stays the floor anyway).

    `completed` is (size, seconds) of the latest range used up completely; without one there is no
    evidence and the previous size stands, so a short-lived process keeps the row's step. A whole
    range that lasted under half of `target` grows the size toward what the target needs (at least
    doubling, at most 16 times); one that lasted over twice the target halves it. A fetch that lost
    a compare-and-set after such a range doubles the size too: fewer fetches are fewer collisions.
    """
    if completed is None:
        return previous
    size, seconds = completed
    if seconds < target / 2:
        needed = size * target / seconds if seconds > 0 else size * 16
        hint = int(min(size * 16, max(size * 2, needed)))
    elif seconds > target * 2:
        hint = size // 2
    else:
        hint = size
    if contended:
        hint = max(hint, size * 2)
    return min(hint, max_step)
