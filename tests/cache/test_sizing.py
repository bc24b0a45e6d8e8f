"""The adaptive size rule alone: growth only on a whole range that went by too fast, as Leaf does."""

import pytest

from django_segment_seq.allocator.blocks import Row, next_block
from django_segment_seq.cache.sizing import next_size

TARGET = 60.0


def size(previous=0, completed=None, contended=False, max_step=1_000_000):
    return next_size(previous, completed, contended=contended, target=TARGET, max_step=max_step)


def test_no_whole_range_yet_keeps_the_previous_size():
    """A fresh process that took one number has no evidence: it keeps asking for the row's step (0)."""
    assert size() == 0
    assert size(previous=400) == 400
    assert size(contended=True) == 0  # a lost race alone is no evidence either


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0.0, 16_000),  # instantly used: the 16-fold ceiling
        (1.0, 16_000),  # 60 times too fast: capped at 16 times
        (10.0, 6_000),  # 6 times too fast: what the target needs
        (25.0, 2_400),  # a little too fast: never less than doubling
        (30.0, 1_000),  # half the target is not too fast
        (120.0, 1_000),  # twice the target is not too slow
        (121.0, 500),  # too slow: halve
    ],
)
def test_a_whole_range_decides(seconds, expected):
    assert size(completed=(1000, seconds)) == expected


def test_contention_after_a_whole_range_doubles_at_least():
    assert size(completed=(1000, 100.0), contended=True) == 2000
    assert size(completed=(1000, 10.0), contended=True) == 6000


def test_ceiling():
    assert size(completed=(1000, 1.0), max_step=5000) == 5000


def test_cycling_rows_ignore_the_adaptive_size():
    """A larger block would bring the next repeat of a cycling sequence sooner."""
    row = Row(value=0, step=10, min_value=1, max_value=100, cycle=True)
    assert next_block("c", row, prefer=1000) == (1, 10)
    assert next_block("c", row._replace(cycle=False), prefer=1000) == (1, 100)
