"""Adaptive step: ranges grow under heavy demand and shrink under light demand, within [row step, MAX_STEP]."""

import itertools

import pytest
from django.test import override_settings

from django_segment_seq import next_value, next_values, sequence_stats
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique

pytestmark = pytest.mark.django_db(transaction=True)

FAST = {"PREFETCH": False, "ADAPTIVE_STEP": True, "MAX_STEP": 800, "STEP_TARGET_SECONDS": 10_000.0}
SLOW = {**FAST, "STEP_TARGET_SECONDS": 0.000_001}


def step() -> int:
    return sequence_stats()[("default", "a")].step


def test_step_grows_to_the_ceiling_and_shrinks_to_the_row_step():
    Sequence.objects.create(name="a", step=100)
    got, steps = [], []
    with override_settings(SEGMENT_SEQ=FAST):  # every range lasts far less than the target: double
        for _ in range(6000):
            got.append(next_value("a"))
            steps.append(step())
    assert steps[0] == 100 and steps[-1] == 800
    assert all(later >= earlier for earlier, later in itertools.pairwise(steps))
    with override_settings(SEGMENT_SEQ=SLOW):  # every range lasts far more than the target: halve
        for _ in range(3000):
            got.append(next_value("a"))
            steps.append(step())
    assert steps[-1] == 100
    assert min(steps) >= 100 and max(steps) <= 800
    assert_unique(got, 9000)
    assert Sequence.objects.get(name="a").step == 100  # the admin's step is never rewritten


@override_settings(SEGMENT_SEQ={**FAST, "MAX_STEP": 50})
def test_row_step_wins_over_a_lower_ceiling():
    Sequence.objects.create(name="a", step=100)
    [next_value("a") for _ in range(500)]
    assert step() == 100


@override_settings(SEGMENT_SEQ={**FAST, "PREFETCH": True})
def test_background_fetches_adapt_too():
    Sequence.objects.create(name="a", step=100)
    got = []
    for _ in range(40):
        got.extend(next_values("a", 50))
    got.extend(next_value("a") for _ in range(3000))
    assert_unique(got, 5000)
    assert 100 < step() <= 800


@override_settings(SEGMENT_SEQ={**FAST, "ADAPTIVE_STEP": False})
def test_off_keeps_the_row_step():
    Sequence.objects.create(name="a", step=100)
    [next_value("a") for _ in range(1000)]
    assert step() == 100


@pytest.mark.parametrize("prefetch", [False, True], ids=["fetch", "prefetch"])
def test_blocks_that_leave_a_rest_grow_the_step_too(prefetch):
    # Blocks of 30 from ranges of 100 leave a rest of 10 behind in each range: it was never counted as used up, so a
    # caller of blocks kept the row's step however fast it went (the ID service's blocks of 100 fetched every few ms).
    Sequence.objects.create(name="a", step=100)
    got = []
    with override_settings(SEGMENT_SEQ={**FAST, "PREFETCH": prefetch}):
        for _ in range(200):
            got.extend(next_values("a", 30))
    assert_unique(got, 6000)
    assert step() == 800
