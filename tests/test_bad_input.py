"""Bad input: each gets an error that names the sequence and the problem, and leaves the stored rows unchanged."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction

from django_segment_seq import SequenceExhausted, SequenceField, SequenceMisconfigured, next_value, next_values
from django_segment_seq.fields.checks.names import sequence_name_errors
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)

BIGINT_MAX = 2**63 - 1


def stored() -> list[dict]:
    return list(Sequence.objects.order_by("name").values())


@pytest.fixture
def existing() -> Sequence:
    """A sequence that has handed out numbers already, so an unchanged table is a real check."""
    Sequence.objects.create(name="s", step=10, max_value=1000)
    next_value("s")
    return Sequence.objects.get(name="s")


# Names ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, message",
    [("", "must not be empty"), ("  ", "must not be empty"), ("n" * 101, "101 characters long; the limit is 100")],
)
@pytest.mark.parametrize("call", [lambda n: next_value(n), lambda n: next_values(n, 3)], ids=["value", "values"])
def test_bad_names_are_refused(existing, call, name, message):
    before = stored()
    with pytest.raises(ValueError, match=message):
        call(name)
    assert stored() == before


def test_long_name_is_named_in_the_error():
    with pytest.raises(ValueError, match="'nnnnnnnnnnnnnnnnnnnn…'"):
        next_value("n" * 101)


@pytest.mark.parametrize(
    "name",
    ["číslo-objednávky-№", "订单号", "emoji-🎟️", "a'b\"c`d", "x; DELETE FROM django_segment_seq_sequence", "%s%%_"],
)
def test_unicode_and_sql_metacharacters_are_plain_names(existing, name):
    assert list(next_values(name, 2)) == [1, 2]
    assert Sequence.objects.get(name=name).value == 1000
    assert Sequence.objects.get(name="s").value == existing.value  # no other row touched


@pytest.mark.parametrize("name", ["", "n" * 101])
def test_model_validation_refuses_bad_names(name):
    with pytest.raises(ValidationError) as raised:
        Sequence(name=name).full_clean()
    assert "name" in raised.value.message_dict


def test_field_with_a_bad_name_fails_the_system_check():
    field = SequenceField("")
    field.set_attributes_from_name("no")
    assert [error.id for error in sequence_name_errors(field)] == ["django_segment_seq.E010"]


# Counts -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, -1, -(2**70)])
def test_counts_below_one_are_refused(existing, count):
    before = stored()
    with pytest.raises(ValueError, match=rf"Sequence 's': the count must be at least 1, not {count}"):
        next_values("s", count)
    assert stored() == before


@pytest.mark.parametrize("count", [1.5, "3", True, None])
def test_counts_that_are_not_ints_are_refused(existing, count):
    before = stored()
    with pytest.raises(TypeError, match="Sequence 's': count must be an int"):
        next_values("s", count)
    assert stored() == before


@pytest.mark.parametrize("count", [991, 2**63, 10**30])
def test_counts_beyond_what_is_left_are_exhausted_not_truncated(existing, count):
    before = stored()
    with pytest.raises(SequenceExhausted, match=r"Sequence 's' is exhausted: \d+ contiguous numbers were asked for"):
        next_values("s", count)
    assert stored() == before
    assert next_value("s") == 2  # the cache is intact too


def test_count_beyond_a_whole_cycle_is_refused():
    Sequence.objects.create(name="c", step=10, max_value=100, cycle=True)
    before = stored()
    with pytest.raises(SequenceMisconfigured, match=r"'c'.*101 contiguous numbers were asked for but the whole range"):
        next_values("c", 101)
    assert stored() == before


# Steps and limits through the model (the admin uses the same validation) ------------------------------------------


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"step": 0}, "step", "at least 1"),
        ({"step": -5}, "step", "at least 1"),
        ({"step": 1001}, "step", "must not exceed the numbers between minimum and maximum (1000)"),
        ({"min_value": 2000}, "min_value", "less than the maximum"),
        ({"max_value": 5}, "max_value", "must not be below the value"),
        ({"value": 5000}, "value", "must not exceed the maximum"),
    ],
)
def test_model_validation_refuses_bad_limits(existing, changes, field, message):
    before = stored()
    for name, value in changes.items():
        setattr(existing, name, value)
    with pytest.raises(ValidationError) as raised:
        existing.full_clean()
    assert any(message in text for text in raised.value.message_dict[field])
    assert stored() == before


# Rows written around validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"step": 0}, "step is 0, it must be at least 1"),
        ({"min_value": 500, "max_value": 400, "value": 0}, "min_value 500 is greater than max_value 400"),
        ({"value": 5000}, "value 5000 is above max_value 1000"),
        ({"value": 5000, "cycle": True}, "value 5000 is above max_value 1000"),
    ],
)
def test_rows_written_around_validation_are_refused(existing, changes, message):
    Sequence.objects.filter(name="s").update(**changes)
    next_values("s", 9)  # the rest of the cached range is still handed out
    before = stored()
    with pytest.raises(SequenceMisconfigured, match=rf"Sequence 's' is misconfigured: {message}"):
        next_value("s")
    assert stored() == before


def test_negative_step_is_refused_by_the_database(existing):
    before = stored()
    with pytest.raises(DatabaseError), transaction.atomic():
        Sequence.objects.filter(name="s").update(step=-1)
    assert stored() == before


def test_step_beyond_the_range_written_directly_is_clipped_at_max_value(existing):
    """Harmless, so not an error: a block never crosses max_value."""
    Sequence.objects.filter(name="s").update(step=10**6)
    assert next_values("s", 9) == range(2, 11)
    assert next_value("s") == 11
    assert Sequence.objects.get(name="s").value == 1000
    with pytest.raises(SequenceExhausted, match=r"'s'.*max_value 1000"):
        next_values("s", 991)


def test_value_below_min_value_written_directly_starts_at_min_value(existing):
    """What raising min_value above the value means: the next block starts at the new minimum."""
    Sequence.objects.filter(name="s").update(min_value=500, value=-7)
    next_values("s", 9)
    assert next_value("s") == 500
