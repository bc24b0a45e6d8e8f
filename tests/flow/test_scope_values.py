"""A scope value names its counter by what the database stores: the same stored instant, date, flag or UUID,
however it was assigned, counts in one row."""

import contextlib
import datetime
import uuid
import zoneinfo

import pytest
from django.utils import timezone

from tests.testapp.models import Delivery, Shift, Slot

pytestmark = pytest.mark.django_db(transaction=True)

UTC = datetime.UTC
INSTANT = datetime.datetime(2026, 11, 25, 8, 30, tzinfo=UTC)


def test_one_stored_instant_counts_in_one_row_however_it_was_assigned():
    paris = timezone.get_default_timezone()
    assigned = [
        INSTANT,  # aware, UTC
        INSTANT.astimezone(zoneinfo.ZoneInfo("Asia/Tokyo")),  # aware, another zone
        timezone.make_naive(INSTANT, paris),  # naive, read in the project's zone as Django stores it
    ]
    numbers = []
    for value in assigned:
        with pytest.warns(RuntimeWarning) if timezone.is_naive(value) else contextlib.nullcontext():
            numbers.append(Shift.objects.create(starts_at=value).number)
    read_back = Shift.objects.get(pk=Shift.objects.first().pk).starts_at  # as the database returns it
    numbers.append(Shift.objects.create(starts_at=read_back).number)
    assert numbers == [1, 2, 3, 4]
    assert {shift.starts_at for shift in Shift.objects.all()} == {INSTANT}


def test_other_instants_count_apart():
    first = Shift.objects.create(starts_at=INSTANT).number
    other = Shift.objects.create(starts_at=INSTANT + datetime.timedelta(microseconds=1)).number
    assert (first, other) == (1, 1)


def test_dates_flags_and_uuids_as_assigned_or_as_text_count_in_one_row():
    token = uuid.uuid4()
    numbers = [
        Slot.objects.create(day=datetime.date(2026, 11, 25), urgent=True, token=token).number,
        Slot.objects.create(day="2026-11-25", urgent="True", token=str(token)).number,
        Slot.objects.create(day=datetime.date(2026, 11, 25), urgent=1, token=str(token).upper()).number,
    ]
    assert numbers == [1, 2, 3]


def test_a_reset_on_instant_at_the_edge_of_the_calendar_is_a_clear_error():
    edge = datetime.datetime(9999, 12, 31, 23, 59, tzinfo=UTC)  # Europe/Paris is already in the year 10000
    with pytest.raises(ValueError, match=r"testapp\.Delivery\.code: reset_on='received_at' holds .*9999-12-31"):
        Delivery.objects.create(received_at=edge)
    assert Delivery.objects.count() == 0
