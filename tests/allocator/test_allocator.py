"""Allocation against the real database: first number, steps, limits, creation rules, edits between fetches."""

import pytest
from django.test import override_settings

from django_segment_seq import (
    SequenceExhausted,
    SequenceMisconfigured,
    SequenceNotFound,
    next_value,
    next_values,
    sequence_stats,
)
from django_segment_seq.allocator.loop import allocate
from django_segment_seq.allocator.request import BlockRequest
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)


def test_first_number_is_min_value_and_row_is_created():
    assert next_value("fresh") == 1
    row = Sequence.objects.get(name="fresh")
    assert (row.value, row.step, row.min_value) == (1000, 1000, 1)


def test_first_number_of_explicit_row_is_its_min_value():
    Sequence.objects.create(name="from-500", min_value=500, step=3)
    assert [next_value("from-500") for _ in range(4)] == [500, 501, 502, 503]
    assert Sequence.objects.get(name="from-500").value == 505


def test_each_allocation_takes_one_step():
    Sequence.objects.create(name="s", step=10)
    assert allocate(BlockRequest("default", "s")).block == (1, 10)
    assert allocate(BlockRequest("default", "s")).block == (11, 20)
    assert Sequence.objects.get(name="s").value == 20


def test_numbers_come_from_memory_between_fetches():
    Sequence.objects.create(name="s", step=100)
    assert [next_value("s") for _ in range(250)] == list(range(1, 251))
    stats = sequence_stats()[("default", "s")]
    assert (stats.handed_out, stats.ranges_fetched, stats.step) == (250, 3, 100)


@override_settings(SEGMENT_SEQ={"CREATE_ON_FIRST_USE": False})
def test_missing_row_is_an_error_when_creation_is_off():
    with pytest.raises(SequenceNotFound, match="'nowhere' does not exist"):
        next_value("nowhere")
    assert not Sequence.objects.filter(name="nowhere").exists()


@override_settings(SEGMENT_SEQ={"DEFAULT_STEP": 7})
def test_default_step_setting_applies_to_created_rows():
    next_value("seven")
    assert Sequence.objects.get(name="seven").step == 7


def test_exhaustion_names_sequence_and_limit_and_changes_nothing():
    Sequence.objects.create(name="small", step=2, max_value=3)
    assert [next_value("small") for _ in range(3)] == [1, 2, 3]
    with pytest.raises(SequenceExhausted, match=r"'small'.*max_value 3"):
        next_value("small")
    assert Sequence.objects.get(name="small").value == 3


def test_cycle_wraps_to_min_value():
    Sequence.objects.create(name="loop", step=2, min_value=1, max_value=3, cycle=True)
    assert [next_value("loop") for _ in range(7)] == [1, 2, 3, 1, 2, 3, 1]


def test_edits_take_effect_at_next_fetch():
    Sequence.objects.create(name="s", step=5)
    assert next_value("s") == 1
    row = Sequence.objects.get(name="s")
    row.step = 50
    row.save()
    assert [next_value("s") for _ in range(4)] == [2, 3, 4, 5]  # rest of the cached range
    assert next_value("s") == 6  # new fetch, new step
    assert Sequence.objects.get(name="s").value == 55


def test_misconfigured_row_is_a_clear_error():
    Sequence.objects.create(name="bad", step=5)
    Sequence.objects.filter(name="bad").update(min_value=10, max_value=5)
    with pytest.raises(SequenceMisconfigured, match=r"'bad'.*min_value 10 is greater than max_value 5"):
        next_value("bad")
    assert Sequence.objects.get(name="bad").value == 0


def test_next_values_are_contiguous_and_increasing():
    Sequence.objects.create(name="s", step=10)
    first = next_values("s", 4)
    assert first == range(1, 5)
    assert next_values("s", 3) == range(5, 8)


def test_large_next_values_is_one_allocation():
    Sequence.objects.create(name="s", step=10)
    numbers = next_values("s", 100_000)
    assert isinstance(numbers, range) and numbers == range(1, 100_001)
    assert sequence_stats()[("default", "s")].ranges_fetched == 1


def test_large_next_values_keeps_the_cached_rest():
    Sequence.objects.create(name="s", step=10)
    assert next_value("s") == 1
    assert next_values("s", 50) == range(11, 61)
    assert next_value("s") == 2


@pytest.mark.parametrize("bad", [0, -3])
def test_next_values_refuses_counts_below_one(bad):
    with pytest.raises(ValueError, match="at least 1"):
        next_values("s", bad)
    assert not Sequence.objects.exists()


@pytest.mark.parametrize("bad", ["", "   ", "x" * 101, None, "a\nb", " a", "a ", ".", "..", "\u202eevil"])
def test_bad_names_are_refused_before_touching_the_table(bad):
    with pytest.raises(ValueError):
        next_value(bad)
    assert not Sequence.objects.exists()


@pytest.mark.parametrize("name", ["ordre-n°-ü", "'; DROP TABLE django_segment_seq_sequence; --", "x" * 100])
def test_unusual_names_are_stored_as_given(name):
    assert next_value(name) == 1
    assert Sequence.objects.get(name=name).name == name


def test_close_connections_then_allocate_again():
    from django_segment_seq import close_connections
    from django_segment_seq.allocator.connections import pool

    Sequence.objects.create(name="s", step=1)
    assert next_value("s") == 1
    close_connections()
    assert pool._idle == {}
    assert next_value("s") == 2
