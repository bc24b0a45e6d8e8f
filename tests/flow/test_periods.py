"""Reset periods: each day, week, month, quarter, (fiscal) year or callable-defined period counts in its own row
from min_value, capped by the format's width."""

import collections
from datetime import UTC, datetime, time

import pytest
from django.test import override_settings

from django_segment_seq import SequenceExhausted, SequenceNotFound, clear_cache, next_value
from django_segment_seq.flow.resets import named_key
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.testapp.models import (
    DailyOrder,
    FiscalInvoice,
    KindTicket,
    MonthlyTicket,
    QuarterlyReport,
    ShiftTicket,
    WeeklyOrder,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_day_restarts_at_min_value(clock):
    clock.set("2026-11-22 23:59:59.999")
    before = [DailyOrder.objects.create().order_no for _ in range(2)]
    clock.advance(milliseconds=1)
    after = [DailyOrder.objects.create().order_no for _ in range(2)]
    assert before == ["OD20261122000001", "OD20261122000002"]
    assert after == ["OD20261123000001", "OD20261123000002"]


def test_period_rows_are_grouped_with_their_base_row(clock):
    Sequence.objects.create(name="daily-order", step=25, min_value=100)
    assert DailyOrder.objects.create().order_no == "OD20261122000100"
    row = Sequence.objects.get(name="daily-order@2026-11-22")
    assert (row.base_name, row.period, row.step, row.min_value, row.max_value) == (
        "daily-order",
        "2026-11-22",
        25,
        100,
        999_999,
    )
    assert Sequence.objects.get(name="daily-order").value == 99  # the base row itself hands out nothing


def test_base_row_is_created_on_first_use(clock):
    DailyOrder.objects.create()
    assert Sequence.objects.filter(name="daily-order", base_name=None, period=None).exists()


@override_settings(SEGMENT_SEQ={"CREATE_ON_FIRST_USE": False})
def test_missing_base_row_without_creation_is_not_found(clock):
    with pytest.raises(SequenceNotFound, match="daily-order"):
        DailyOrder.objects.create()
    Sequence.objects.create(name="daily-order")
    assert DailyOrder.objects.create().order_no == "OD20261122000001"


def test_base_step_edit_applies_to_future_periods(clock):
    Sequence.objects.create(name="daily-order", step=10)
    DailyOrder.objects.create()
    base = Sequence.objects.get(name="daily-order")
    base.step = 3
    base.save()
    clock.advance(days=1)
    DailyOrder.objects.create()
    assert Sequence.objects.get(name="daily-order@2026-11-22").step == 10
    assert Sequence.objects.get(name="daily-order@2026-11-23").step == 3


def test_period_is_taken_in_the_project_time_zone(clock):
    # 23:30 UTC on the 22nd is 00:30 on the 23rd in Europe/Paris.
    clock.moment = datetime(2026, 11, 22, 23, 30, tzinfo=UTC)
    assert DailyOrder.objects.create().order_no == "OD20261123000001"


def test_monthly_and_yearly_boundaries(clock):
    clock.set("2026-12-31 23:59:59")
    assert MonthlyTicket.objects.create().code == "M2026-12-01"
    clock.advance(seconds=1)
    assert MonthlyTicket.objects.create().code == "M2027-01-01"
    clock.set("2027-01-15 08:00")
    assert MonthlyTicket.objects.create().code == "M2027-01-02"
    assert sorted(Sequence.objects.filter(base_name="monthly-ticket").values_list("period", flat=True)) == [
        "2026-12",
        "2027-01",
    ]


def test_width_cap_raises_naming_sequence_and_period(clock):
    Sequence.objects.create(name="monthly-ticket", step=40)
    codes = [MonthlyTicket.objects.create().code for _ in range(99)]
    assert codes[-1] == "M2026-11-99" and len(set(codes)) == 99
    with pytest.raises(SequenceExhausted) as caught:
        MonthlyTicket.objects.create()
    message = str(caught.value)
    assert "'monthly-ticket'" in message and "2026-11" in message and "99" in message
    assert MonthlyTicket.objects.count() == 99
    clock.advance(days=30)  # the next month counts afresh
    assert MonthlyTicket.objects.create().code == "M2026-12-01"


def test_lower_row_maximum_wins_over_the_width_cap(clock):
    Sequence.objects.create(
        name="kind-ticket@2026-11-22", base_name="kind-ticket", period="2026-11-22", max_value=2, step=1
    )
    assert [KindTicket.objects.create(kind="IS").code for _ in range(2)] == ["IS202611220001", "IS202611220002"]
    with pytest.raises(SequenceExhausted, match="2026-11-22"):
        KindTicket.objects.create(kind="IS")


def test_width_cap_holds_even_if_the_row_maximum_was_raised(clock):
    MonthlyTicket.objects.create()
    Sequence.objects.filter(name="monthly-ticket@2026-11").update(value=99, max_value=10**6)
    clear_cache()  # the first range (2..99) is still cached; take the next one from the row
    with pytest.raises(SequenceExhausted, match="up to 99"):
        MonthlyTicket.objects.create()


def test_integer_sequence_of_the_same_name_is_untouched(clock):
    DailyOrder.objects.create()
    assert next_value("daily-order") == 1  # the base row is a sequence of its own


def test_processes_saving_across_midnight(run_workers):
    """Four processes with clocks up to 40 s apart save across midnight: texts unique, each day from 1."""
    Sequence.objects.create(name="daily-order", step=10)
    results = run_workers(
        [("flow-daily", skew, 120) for skew in ("-20", "-7", "6", "20")],
        SEGMENT_SEQ_TEST_CLOCK="2026-11-22T23:59:30+01:00",
        SEGMENT_SEQ_TEST_TICK="0.5",
    )
    texts = assert_unique([f"OD{n:014d}" for part in results for n in part], 480)
    assert_unique(DailyOrder.objects.values_list("order_no", flat=True), 480)
    by_day = collections.defaultdict(list)
    for text in texts:
        by_day[text[2:10]].append(int(text[10:]))
    assert set(by_day) == {"20261122", "20261123"}
    for numbers in by_day.values():
        assert min(numbers) == 1
        assert_unique(numbers)
    rows = Sequence.objects.filter(base_name="daily-order")
    assert sorted(rows.values_list("period", "step")) == [("2026-11-22", 10), ("2026-11-23", 10)]


def test_derived_name_over_the_limit_is_refused(clock):
    from django_segment_seq.flow.derived import take

    with pytest.raises(ValueError, match="100"):
        take("n" * 95, str, period="2026-11-22", gapless=True)
    assert not Sequence.objects.exists()


def test_ten_thousandth_ticket_of_a_day_is_refused(clock):
    KindTicket.objects.create(kind="IS")
    Sequence.objects.filter(name="kind-ticket@2026-11-22").update(value=9998)
    clear_cache()
    assert KindTicket.objects.create(kind="RQ").code == "RQ202611229999"
    with pytest.raises(SequenceExhausted) as caught:
        KindTicket.objects.create(kind="IS")
    assert "'kind-ticket', period 2026-11-22" in str(caught.value)
    assert caught.value.period == "2026-11-22" and caught.value.sequence_name == "kind-ticket"
    assert max(len(code) for code in KindTicket.objects.values_list("code", flat=True)) == 14
    clock.advance(days=1)
    assert KindTicket.objects.create(kind="IS").code == "IS202611230001"


# mode -> (model, field, sequence, prefix before the period, clock start, the two periods it crosses)
BOUNDARIES = {
    "flow-weekly": (WeeklyOrder, "code", "weekly-order", "W", "2027-01-03T23:59:30+01:00", ["2026-W53", "2027-W01"]),
    "flow-quarterly": (
        QuarterlyReport,
        "code",
        "quarterly-report",
        "Q",
        "2027-06-30T23:59:30+02:00",
        ["2027-Q2", "2027-Q3"],
    ),
    "flow-fiscal": (
        FiscalInvoice,
        "number",
        "fiscal-invoice",
        "INV-",
        "2027-03-31T23:59:30+02:00",
        ["FY2026", "FY2027"],
    ),
    "flow-shift": (ShiftTicket, "code", "shift-ticket", "S", "2026-11-22T15:59:30+01:00", ["20261122B", "20261122C"]),
}


@pytest.mark.parametrize("mode", list(BOUNDARIES))
def test_processes_saving_across_a_period_boundary(run_workers, mode):
    """Four processes with clocks up to 40 s apart save across a week, quarter, fiscal-year or shift boundary."""
    model, field, sequence, prefix, start, periods = BOUNDARIES[mode]
    Sequence.objects.create(name=sequence, step=10)
    results = run_workers(
        [(mode, skew, 120) for skew in ("-20", "-7", "6", "20")],
        SEGMENT_SEQ_TEST_CLOCK=start,
        SEGMENT_SEQ_TEST_TICK="0.5",
    )
    assert_unique([n for part in results for n in part], 480)
    texts = assert_unique(model.objects.values_list(field, flat=True), 480)
    by_period = collections.defaultdict(list)
    for text in texts:
        shown, number = text.removeprefix(prefix).rsplit("-", 1)
        by_period[shown].append(int(number))
    assert sorted(by_period) == periods
    for numbers in by_period.values():
        assert min(numbers) == 1
        assert_unique(numbers)
    assert sorted(Sequence.objects.filter(base_name=sequence).values_list("period", flat=True)) == periods
    if mode == "flow-fiscal":  # gapless, and every dated invoice in its own date's fiscal year
        for numbers in by_period.values():
            assert sorted(numbers) == list(range(1, len(numbers) + 1))
        dated = FiscalInvoice.objects.exclude(issued_on=None)
        assert dated.count() == 240
        for invoice in dated:
            fiscal_year = named_key(datetime.combine(invoice.issued_on, time()), "yearly", 4)
            assert invoice.number.startswith(f"INV-{fiscal_year}-")
