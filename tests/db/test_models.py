"""Sequence rows: validation of limits, value only forward, and saves that never rewind a sequence."""

import pytest
from django.core.exceptions import ValidationError

from django_segment_seq import next_value
from django_segment_seq.db.columns import BIGINT_MIN
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)


def test_new_row_starts_so_first_number_is_min_value():
    row = Sequence.objects.create(name="s", min_value=10)
    assert row.value == 9
    assert next_value("s") == 10


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"step": 0}, "step", "at least 1"),
        ({"min_value": 5, "max_value": 5}, "max_value", "greater than the minimum"),
        ({"min_value": 1, "max_value": 10, "step": 11}, "step", "must not exceed"),
        ({"min_value": BIGINT_MIN}, "min_value", "greater than"),
        ({"value": 50, "max_value": 10}, "value", "must not exceed the maximum"),
    ],
)
def test_invalid_limits_are_refused(fields, field, message):
    row = Sequence(name="s", **fields)
    with pytest.raises(ValidationError) as info:
        row.full_clean()
    assert message in " ".join(info.value.message_dict[field])


def test_value_can_only_move_forward_in_validation():
    next_value("s")  # the row now says 1000 numbers are handed out
    row = Sequence.objects.get(name="s")
    row.value = 10
    with pytest.raises(ValidationError) as info:
        row.full_clean()
    assert "only move forward" in info.value.message_dict["value"][0]


def test_max_value_below_handed_out_numbers_is_refused():
    next_value("s")
    row = Sequence.objects.get(name="s")
    row.max_value = 500
    with pytest.raises(ValidationError) as info:
        row.full_clean()
    assert "must not be below the value" in info.value.message_dict["max_value"][0]


def test_saving_a_stale_copy_never_rewinds_the_value():
    Sequence.objects.create(name="s", step=10)
    stale = Sequence.objects.get(name="s")  # value 0, like an admin form opened earlier
    taken = [next_value("s") for _ in range(25)]  # the table moves to 30 meanwhile
    stale.step = 20
    stale.save()
    row = Sequence.objects.get(name="s")
    assert (row.value, row.step) == (30, 20)
    assert next_value("s") not in taken


def test_explicit_lower_value_raises_and_changes_nothing():
    next_value("s")
    row = Sequence.objects.get(name="s")
    row.value = 3
    with pytest.raises(ValidationError):
        row.save()
    assert Sequence.objects.get(name="s").value == 1000


def test_value_moves_forward_on_save():
    next_value("s")
    row = Sequence.objects.get(name="s")
    row.value = 5000
    row.save()
    assert Sequence.objects.get(name="s").value == 5000


def test_forward_move_already_overtaken_is_not_an_error():
    Sequence.objects.create(name="s", step=100)
    row = Sequence.objects.get(name="s")
    row.value = 50
    next_value("s")  # the table moves to 100
    row.save()
    assert Sequence.objects.get(name="s").value == 100 and row.value == 100
