"""gap_report(): per scope and period, the numbers missing between the first and the highest stored, voided or not."""

import pytest

from django_segment_seq import next_values, void
from django_segment_seq.audit.exceptions import UnknownField
from django_segment_seq.audit.gaps import gap_report
from django_segment_seq.audit.ranges import Span, VoidedSpan, missing_between, runs, split
from django_segment_seq.flow.parsing import UnparseableFormat
from tests.testapp.models import (
    Company,
    CompanyInvoice,
    CompanyOrder,
    DailyOrder,
    ImportedOrder,
    IsoWeekTicket,
    Order,
    WeeklyOrder,
)

pytestmark = pytest.mark.django_db(transaction=True)


def store_orders(numbers):
    Order.objects.bulk_create([Order(order_no=n) for n in numbers])


def test_spans_are_shown_compactly():
    assert [str(s) for s in runs([1, 2, 3, 7, 9, 10])] == ["1\u20133", "7", "9\u201310"]
    assert missing_between([1, 2, 2, 5, 7]) == [Span(3, 4), Span(6, 6)]


def test_split_keeps_runs_of_one_reason_together():
    explained, unexplained = split([Span(10, 20)], {11: "a", 12: "a", 13: "b", 20: "a"})
    assert explained == [VoidedSpan(Span(11, 12), "a"), VoidedSpan(Span(13, 13), "b"), VoidedSpan(Span(20, 20), "a")]
    assert unexplained == [Span(10, 10), Span(14, 19)]


def test_integer_gaps_split_into_voided_and_unexplained():
    next_values("order", 1100)
    store_orders([n for n in range(1000, 1101) if n not in (1020, 1041, 1042, 1043, 1090)])
    void("testapp.Order.order_no", 1042, "cancelled draft")
    void("testapp.Order.order_no", 1090, "spoiled form")
    report = gap_report("testapp.Order.order_no")
    [series] = report.series
    assert (series.scope, series.period, series.first, series.highest, series.stored) == (None, None, 1000, 1100, 96)
    assert series.voided == [
        VoidedSpan(Span(1042, 1042), "cancelled draft"),
        VoidedSpan(Span(1090, 1090), "spoiled form"),
    ]
    assert series.unexplained == [Span(1020, 1020), Span(1041, 1041), Span(1043, 1043)]
    assert (report.voided_count, report.unexplained_count) == (2, 3)


def test_a_gapless_field_has_no_gaps():
    store_orders(range(1, 51))
    [series] = gap_report("testapp.Order.order_no").series
    assert (series.first, series.highest, series.voided, series.unexplained) == (1, 50, [], [])


def test_an_empty_column_has_no_series():
    assert gap_report("testapp.Order.order_no").series == []


def test_a_voided_number_outside_the_gaps_is_not_a_gap():
    next_values("order", 10)
    store_orders([1, 2, 3])
    void("testapp.Order.order_no", 2, "draft kept")
    void("testapp.Order.order_no", 9, "cancelled after the last one stored")
    [series] = gap_report("testapp.Order.order_no").series
    assert (series.voided, series.unexplained) == ([], [])


def test_scoped_integer_gaps_are_per_scope():
    acme, globex = Company.objects.create(code="acme"), Company.objects.create(code="globex")
    for _ in range(5):
        CompanyOrder.objects.create(company=acme)  # numbered 1 to 5 from acme's own counter
    CompanyOrder.objects.filter(company=acme, number__in=[3, 4]).delete()
    CompanyOrder.objects.bulk_create([CompanyOrder(company=globex, number=n) for n in (1, 3, 4, 6)])
    void("testapp.CompanyOrder.number", 3, "cancelled", scope={"company": acme})
    report = gap_report("testapp.CompanyOrder.number")
    by_scope = {series.scope: series for series in report.series}
    assert set(by_scope) == {f"company={acme.pk}", f"company={globex.pk}"}
    acme_series, globex_series = by_scope[f"company={acme.pk}"], by_scope[f"company={globex.pk}"]
    assert (acme_series.voided, acme_series.unexplained) == ([VoidedSpan(Span(3, 3), "cancelled")], [Span(4, 4)])
    assert (globex_series.voided, globex_series.unexplained) == ([], [Span(2, 2), Span(5, 5)])
    only = gap_report("testapp.CompanyOrder.number", scope=f"company={globex.pk}")
    assert [series.scope for series in only.series] == [f"company={globex.pk}"]


def test_formatted_gaps_per_period_read_from_the_text(clock):
    texts = [f"OD20261122{n:06d}" for n in (1, 2, 4, 5, 9)] + [f"OD20261123{n:06d}" for n in (1, 3)] + ["legacy-7"]
    DailyOrder.objects.bulk_create([DailyOrder(order_no=text) for text in texts])
    next_values("daily-order@2026-11-22", 10)
    void("testapp.DailyOrder.order_no", "OD20261122000003", "customer cancelled")
    report = gap_report("testapp.DailyOrder.order_no")
    assert [(s.period, s.first, s.highest, s.stored) for s in report.series] == [
        ("2026-11-22", 1, 9, 5),
        ("2026-11-23", 1, 3, 2),
    ]
    first_day, second_day = report.series
    assert first_day.voided == [VoidedSpan(Span(3, 3), "customer cancelled")]
    assert first_day.unexplained == [Span(6, 8)]
    assert (second_day.voided, second_day.unexplained) == ([], [Span(2, 2)])
    assert report.unreadable == 1  # "legacy-7", counted though it does not start with the format's literal "OD"
    only = gap_report("testapp.DailyOrder.order_no", period="2026-11-23")
    assert [series.period for series in only.series] == ["2026-11-23"]


def test_formatted_gaps_with_a_period_placeholder(clock):
    WeeklyOrder.objects.bulk_create([WeeklyOrder(code=f"W2026-W47-{n:05d}") for n in (1, 2, 6)])
    [series] = gap_report("testapp.WeeklyOrder.code").series
    assert (series.period, series.unexplained) == ("2026-W47", [Span(3, 5)])


def test_formatted_scoped_gaps(clock):
    acme = Company.objects.create(code="acme")
    CompanyInvoice.objects.bulk_create(
        [CompanyInvoice(company=acme, number=f"INV-acme-2026-{n:05d}") for n in (1, 2, 5)]
    )
    [series] = gap_report("testapp.CompanyInvoice.number").series
    assert (series.scope, series.period, series.unexplained) == (f"company={acme.pk}", "2026", [Span(3, 4)])


def test_unreadable_texts_are_counted(clock):
    ImportedOrder.objects.bulk_create([ImportedOrder(code=t) for t in ("IM20261122-00001", "IM20261122-00003", "IMx")])
    report = gap_report("testapp.ImportedOrder.code")
    assert report.unreadable == 1
    assert report.series[0].unexplained == [Span(2, 2)]


def test_a_format_that_cannot_be_read_is_refused():
    with pytest.raises(UnparseableFormat):
        gap_report("testapp.Payment.ref")


def test_an_unknown_label_is_refused():
    with pytest.raises(UnknownField):
        gap_report("testapp.Order.nothing")


def test_a_date_showing_an_iso_week_gives_its_period(clock):
    IsoWeekTicket.objects.bulk_create([IsoWeekTicket(code=f"T2026-W47-{n:04d}") for n in (1, 4)])
    [series] = gap_report("testapp.IsoWeekTicket.code").series
    assert (series.period, series.unexplained) == ("2026-W47", [Span(2, 3)])
    assert IsoWeekTicket.objects.create().code == "T2026-W47-0001"  # the field renders what was read back
