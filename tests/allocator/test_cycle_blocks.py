"""Cycling rows: every allocation must move the row, and the adaptive size must not outgrow a cycling row's step."""

import itertools

import pytest
from django.test import override_settings

from django_segment_seq import clear_cache, next_value, sequence_stats
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique

pytestmark = pytest.mark.django_db(transaction=True)


def take_block(name: str) -> tuple[int, int]:
    """One allocation in a fresh cache: the block this process now owns, as (first, last)."""
    clear_cache()
    first = next_value(name)
    return first, first + sequence_stats()[("default", name)].step - 1


def test_blocks_after_the_wrap_move_the_row_when_the_step_is_the_whole_span():
    """With step == max - min + 1, a block after the wrap ends exactly at the stored value.

    The compare-and-set `SET value = 10 WHERE value = 10` then changes nothing, so every taker
    that read the same row would get the same block. Each allocation must be recorded in the row
    (version moves by one per allocation), so two consecutive blocks are never the same block
    while the row says nothing moved.
    """
    Sequence.objects.create(name="c", step=10, min_value=1, max_value=10, cycle=True)
    versions = [Sequence.objects.get(name="c").version]
    blocks = []
    for _ in range(3):
        blocks.append(take_block("c"))
        versions.append(Sequence.objects.get(name="c").version)
    assert blocks[0] == (1, 10)
    for i in range(1, len(blocks)):
        assert blocks[i] != blocks[i - 1] or versions[i + 1] != versions[i], (
            f"allocation {i + 1} got {blocks[i]} again and the row did not move: versions {versions}"
        )
    assert [b - a for a, b in itertools.pairwise(versions)] == [1, 1, 1], f"versions {versions}"


@override_settings(SEGMENT_SEQ={"PREFETCH": False, "ADAPTIVE_STEP": True, "MAX_BACKOFF": 0.01})
def test_adaptive_size_never_exceeds_a_cycling_rows_step():
    """A fast taker's adaptive size (16 times the step) must not grow blocks of a cycling row past its step.

    Otherwise, with step 10 and max 100, every block after the first wrap is (1, 100): the whole
    cycle, ending at the stored value, taken again and again.
    """
    Sequence.objects.create(name="c", step=10, min_value=1, max_value=100, cycle=True)
    sizes = set()
    got = []
    for _ in range(250):
        got.append(next_value("c"))
        sizes.add(sequence_stats()[("default", "c")].step)
    assert max(sizes) <= 10, f"block sizes {sorted(sizes)} for a cycling row of step 10"
    # Within one pass over 1..100 nothing repeats.
    assert_unique(got[:100])
