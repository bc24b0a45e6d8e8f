"""Writes that never read the row (copies made by hand, raw saves, fixtures) never rewind a sequence.

Every test starts from a row whose value has moved forward while numbers were handed out, then
writes an older state of it through one of the model's write paths. The row's value must not go
down, its version must not go back, and the next number must be above every number handed out.
"""

import json

import pytest
from django.core import serializers
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.db.models import F

from django_segment_seq import clear_cache, next_value
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def moved():
    """Row "x" at step 10 after 25 numbers: value 30, version 3, and the numbers handed out."""
    Sequence.objects.create(name="x", step=10)
    taken = [next_value("x") for _ in range(25)]
    row = Sequence.objects.get(name="x")
    assert (row.value, row.version) == (30, 3)
    return row, taken


def older_copy(row, **fields):
    """The row as it stood before any number was handed out, as a new instance with the row's pk."""
    values = {
        "pk": row.pk,
        "name": row.name,
        "value": 0,
        "version": 0,
        "step": row.step,
        "min_value": row.min_value,
        "max_value": row.max_value,
        "cycle": row.cycle,
        "created": row.created,
        "modified": row.modified,
    }
    values.update(fields)
    return Sequence(**values)


def assert_next_number_is_new(taken):
    clear_cache()
    assert next_value("x") > max(taken)


def write_fixture(tmp_path, row, **fields):
    """A JSON fixture of `row` holding an older value and version, as a dump taken earlier would."""
    values = {
        "name": row.name,
        "value": 0,
        "version": 0,
        "step": row.step,
        "min_value": row.min_value,
        "max_value": row.max_value,
        "cycle": row.cycle,
        "base_name": None,
        "period": None,
        "created": row.created.isoformat(),
        "modified": row.modified.isoformat(),
    }
    values.update(fields)
    path = tmp_path / "sequences.json"
    path.write_text(json.dumps([{"model": "django_segment_seq.sequence", "pk": row.pk, "fields": values}]))
    return path


# Writes that keep the higher value: the copy's other columns are written, the value stays, version moves on.


@pytest.mark.parametrize(
    "options",
    [{}, {"force_update": True}, {"update_fields": ["value", "version", "step"]}],
    ids=["save", "force_update", "update_fields"],
)
def test_saving_an_older_copy_with_the_rows_pk_keeps_the_higher_value(moved, options):
    row, taken = moved
    copy = older_copy(row, step=20)
    copy.save(**options)
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version, stored.step) == (30, 4, 20)
    assert (copy.value, copy.version) == (30, 4)  # the instance shows the row as stored
    assert_next_number_is_new(taken)


def test_an_older_copy_without_creation_time_keeps_the_stored_one(moved):
    row, taken = moved
    Sequence(pk=row.pk, name="x", value=0, step=20).save()
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version, stored.step, stored.created) == (30, 4, 20, row.created)
    assert_next_number_is_new(taken)


def test_a_copy_with_the_rows_pk_still_moves_the_value_forward(moved):
    row, taken = moved
    copy = older_copy(row, value=500)
    copy.save()
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version) == (500, 4)
    assert_next_number_is_new(taken)
    assert next_value("x") > 500


@pytest.mark.parametrize("expression, expected", [(F("value") - 10, 30), (F("value") + 100, 130)], ids=["back", "on"])
def test_a_copy_holding_an_expression_moves_the_value_forward_only(moved, expression, expected):
    row, taken = moved
    copy = older_copy(row, value=expression)
    copy.save()
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version) == (expected, 4)
    assert copy.value == expected
    assert_next_number_is_new(taken)


def test_a_raw_save_of_a_deserialized_row_keeps_the_higher_value(moved):
    row, taken = moved
    data = serializers.serialize("json", [older_copy(row, step=20)])
    (deserialized,) = serializers.deserialize("json", data)
    deserialized.save()  # Model.save_base(raw=True), which bypasses Sequence.save()
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version, stored.step) == (30, 4, 20)
    assert_next_number_is_new(taken)


def test_loaddata_of_an_older_fixture_keeps_the_higher_value(moved, tmp_path):
    row, taken = moved
    call_command("loaddata", write_fixture(tmp_path, row, step=20), verbosity=0)
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version, stored.step) == (30, 4, 20)
    assert_next_number_is_new(taken)


def test_loaddata_of_a_fresh_dump_still_moves_the_version(moved, tmp_path):
    """A compare-and-set that read the row before the load must fail, even when the load changed nothing."""
    row, taken = moved
    call_command("loaddata", write_fixture(tmp_path, row, value=row.value, version=row.version), verbosity=0)
    read_before = Sequence.objects.filter(pk=row.pk, value=row.value, version=row.version)
    assert read_before.update(value=row.value + 10, version=row.version + 1) == 0
    assert Sequence.objects.get(pk=row.pk).version == row.version + 1
    assert_next_number_is_new(taken)


# Writes that are refused: nothing changes.


def test_loaddata_refuses_a_maximum_below_the_numbers_handed_out(moved, tmp_path):
    row, taken = moved
    with pytest.raises(ValidationError) as info:
        call_command("loaddata", write_fixture(tmp_path, row, max_value=10), verbosity=0)
    assert "must not be below the value" in info.value.message_dict["max_value"][0]
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version, stored.max_value) == (30, 3, row.max_value)
    assert_next_number_is_new(taken)


def test_a_copy_with_a_value_above_its_maximum_is_refused(moved):
    row, taken = moved
    with pytest.raises(ValidationError) as info:
        older_copy(row, value=500, max_value=100).save()
    assert "must not exceed the maximum" in info.value.message_dict["value"][0]
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version, stored.max_value) == (30, 3, row.max_value)
    assert_next_number_is_new(taken)


# The paths below were already safe; they stay so.


@pytest.mark.parametrize(
    "write",
    [
        lambda row: older_copy(row).save(force_insert=True),
        lambda row: older_copy(row, pk=None).save(),
        lambda row: Sequence.objects.create(name="x", value=0),
        lambda row: Sequence.objects.get_or_create(name="x", value=0),
        lambda row: Sequence.objects.get_or_create(pk=row.pk, name="x", value=0),
    ],
    ids=["force_insert", "save_without_pk", "create", "get_or_create_by_value", "get_or_create_by_pk"],
)
def test_inserting_an_existing_row_again_is_refused(moved, write):
    row, taken = moved
    with pytest.raises(IntegrityError), transaction.atomic():
        write(row)
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version) == (30, 3)
    assert_next_number_is_new(taken)


def test_get_or_create_of_an_existing_row_writes_nothing(moved):
    _row, taken = moved
    found, created = Sequence.objects.get_or_create(name="x", defaults={"value": 0, "version": 0})
    assert not created and (found.value, found.version) == (30, 3)
    assert_next_number_is_new(taken)


def test_update_or_create_refuses_a_lower_value(moved):
    row, taken = moved
    with pytest.raises(ValidationError) as info:
        Sequence.objects.update_or_create(name="x", defaults={"value": 0, "version": 0, "step": 20})
    assert "only move forward" in info.value.message_dict["value"][0]
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version, stored.step) == (30, 3, 10)
    assert_next_number_is_new(taken)


def test_update_or_create_ignores_an_older_version(moved):
    row, taken = moved
    Sequence.objects.update_or_create(name="x", defaults={"version": 0, "step": 20})
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version, stored.step) == (30, 4, 20)
    assert_next_number_is_new(taken)


def test_save_with_update_fields_of_a_loaded_row_refuses_a_lower_value(moved):
    row, taken = moved
    row.value, row.version = 0, 0
    with pytest.raises(ValidationError):
        row.save(update_fields=["value", "version"])
    stored = Sequence.objects.get(pk=row.pk)
    assert (stored.value, stored.version) == (30, 3)
    assert_next_number_is_new(taken)
