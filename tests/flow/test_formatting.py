"""Formats of flow numbers: the template mini-language, width caps, widest output, formatted fields on real models."""

from datetime import UTC, date, datetime

import pytest
from django.db import models
from django.utils import timezone

from django_segment_seq import SequenceField
from django_segment_seq.fields import FormattedSequenceField
from django_segment_seq.flow.formats import FlowFormat, width_cap
from django_segment_seq.models import Sequence
from tests.testapp.models import (
    DailyOrder,
    Delivery,
    FiscalInvoice,
    IssuedInvoice,
    KindTicket,
    Parcel,
    Payment,
    QuarterlyReport,
    ShiftTicket,
    WeeklyOrder,
    shift_period,
)


@pytest.mark.parametrize(
    "spec, cap",
    [
        ("04d", 9999),
        ("06", 999_999),
        ("0>3", 999),
        ("0=5d", 99_999),
        ("+05d", 9999),
        ("04x", 0xFFFF),
        ("d", None),
        ("6d", None),
        ("", None),
    ],
)
def test_zero_padded_width_caps_the_counter(spec, cap):
    assert width_cap(spec) == cap


def test_template_is_parsed():
    fmt = FlowFormat("OD{date:%Y%m%d}{value:06d}")
    assert fmt.problems == [] and fmt.has_value and fmt.cap == 999_999
    assert fmt.date_specs == ["%Y%m%d"] and fmt.widest() == 16


@pytest.mark.parametrize(
    "source, problem",
    [
        ("{value", "not a valid format string"),
        ("{counter:04d}", "unknown"),
        ("{0}", "unknown"),
        ("{value:04q}", "not a valid int format spec"),
        ("{value!r}", "no conversion"),
        ("{value:0{w}d}", "nested"),
        (42, "string or a callable"),
    ],
)
def test_bad_templates_are_reported(source, problem):
    assert any(problem in p for p in FlowFormat(source).problems)


def test_widest_counts_month_names_and_instances():
    fmt = FlowFormat("{instance.kind}-{date:%B}-{value:03d}")
    assert fmt.widest([2]) == 2 + 1 + len("September") + 1 + 3


@pytest.mark.parametrize(
    "source, reset, coarse",
    [
        ("{date:%Y%m%d}{value}", "daily", False),
        ("{date:%Y%m}{value}", "daily", True),
        ("{date:%m%d}{value}", "daily", True),
        ("{date:%Y}-{date:%j}-{value}", "daily", False),
        ("{value:04d}", "daily", True),
        ("{date:%Y%m%d}{value}", "monthly", False),
        ("{date:%y%m}{value}", "monthly", False),
        ("{date:%G-%V}{value}", "monthly", True),
        ("{date:%Y}{value}", "yearly", False),
    ],
)
def test_date_part_must_tell_periods_apart(source, reset, coarse):
    assert (FlowFormat(source).period_problem(reset) is not None) is coarse


def test_formatted_field_is_a_char_field():
    field = SequenceField("x", format="A{value:04d}")
    assert isinstance(field, FormattedSequenceField) and isinstance(field, models.CharField)
    assert field.max_length == 32
    assert isinstance(SequenceField("x"), models.BigIntegerField)


def test_formatted_field_deconstructs_to_sequence_field():
    field = SequenceField("x", format="A{date:%Y}{value:04d}", reset="yearly", gapless=True, max_length=20)
    _, path, args, kwargs = field.deconstruct()
    assert path == "django_segment_seq.fields.SequenceField"
    assert kwargs == {
        "sequence_name": "x",
        "format": "A{date:%Y}{value:04d}",
        "reset": "yearly",
        "gapless": True,
        "max_length": 20,
    }
    rebuilt = SequenceField(*args, **kwargs)
    assert isinstance(rebuilt, FormattedSequenceField) and rebuilt.deconstruct() == field.deconstruct()


pytestmark_db = pytest.mark.django_db(transaction=True)


@pytestmark_db
def test_date_and_zero_padded_value(clock):
    assert [DailyOrder.objects.create().order_no for _ in range(3)] == [
        "OD20261122000001",
        "OD20261122000002",
        "OD20261122000003",
    ]
    assert list(DailyOrder.objects.order_by("pk").values_list("order_no", flat=True))[-1] == "OD20261122000003"


@pytestmark_db
def test_instance_attribute_in_format(clock):
    codes = [KindTicket.objects.create(kind=kind).code for kind in ("IS", "RQ", "IS")]
    assert codes == ["IS202611220001", "RQ202611220002", "IS202611220003"]


@pytestmark_db
def test_callable_format_gets_value_instance_and_now(clock):
    assert Payment.objects.create(currency="USD").ref == "PAY/26/USD/1"
    assert Payment.objects.create().ref == "PAY/26/EUR/2"


@pytestmark_db
def test_explicit_text_is_kept(clock):
    assert DailyOrder.objects.create(order_no="MANUAL-1").order_no == "MANUAL-1"
    assert DailyOrder.objects.create().order_no == "OD20261122000001"


@pytestmark_db
def test_formatted_primary_key():
    first, second = Parcel.objects.create(note="a"), Parcel(note="b")
    second.save()
    assert (first.pk, second.pk) == ("P000001", "P000002")
    second.note = "b2"
    second.save()
    assert Parcel.objects.count() == 2 and Parcel.objects.get(pk="P000002").note == "b2"
    assert Sequence.objects.get(name="parcel").max_value == 999_999


@pytestmark_db
def test_bulk_create_formats_every_number(clock):
    Sequence.objects.create(name="parcel", step=7)
    parcels = Parcel.objects.bulk_create([Parcel(note=str(i)) for i in range(20)])
    orders = DailyOrder.objects.bulk_create([DailyOrder() for _ in range(20)] + [DailyOrder(order_no="X")])
    assert sorted(p.pk for p in parcels) == [f"P{i:06d}" for i in range(1, 21)]
    assert sorted(Parcel.objects.values_list("pk", flat=True)) == [f"P{i:06d}" for i in range(1, 21)]
    assert sorted(o.order_no for o in orders) == [f"OD20261122{i:06d}" for i in range(1, 21)] + ["X"]


@pytestmark_db
def test_text_longer_than_max_length_is_refused(clock):
    class Tiny:
        kind = "TOO-LONG-FOR-THE-COLUMN" * 2

    field = KindTicket._meta.get_field("code")
    with pytest.raises(ValueError, match="max_length"):
        field._take(Tiny())


def test_period_placeholder_and_default_width():
    weekly = SequenceField("w", format="W{period}-{value:05d}", reset="weekly")
    assert FlowFormat("W{period}-{value:05d}").period_specs == [""]
    assert weekly.max_length == 32 and weekly.flow.widest(reset=weekly.reset_rule) == 1 + 8 + 1 + 5
    shift = SequenceField("s", format="S{period:>10}-{value:020d}", reset=shift_period)
    assert shift.max_length == 1 + 10 + 1 + 20


def test_new_options_deconstruct_and_reach_migrations():
    from django.db.migrations.writer import MigrationWriter

    field = SequenceField(
        "x", format="{period}{value:04d}", reset="yearly", fiscal_year_start=4, reset_on="issued_on", max_length=20
    )
    _name, _path, args, kwargs = field.deconstruct()
    assert kwargs == {
        "sequence_name": "x",
        "format": "{period}{value:04d}",
        "reset": "yearly",
        "fiscal_year_start": 4,
        "reset_on": "issued_on",
        "max_length": 20,
    }
    assert SequenceField(*args, **kwargs).deconstruct() == field.deconstruct()
    shift = ShiftTicket._meta.get_field("code")
    assert shift.deconstruct()[3]["reset"] is shift_period
    text, imports = MigrationWriter.serialize(shift)
    assert "reset=tests.testapp.models.shift_period" in text and "import tests.testapp.models" in imports


@pytestmark_db
def test_record_dated_in_december_and_saved_in_january_counts_in_december(clock):
    clock.set("2027-01-02 09:00")
    assert IssuedInvoice.objects.create(issued_on=date(2026, 12, 31)).number == "INV-202612-00001"
    assert IssuedInvoice.objects.create().number == "INV-202701-00001"  # no date of its own: now
    assert IssuedInvoice.objects.create(issued_on="2026-12-30").number == "INV-202612-00002"
    assert IssuedInvoice.objects.create(issued_on=date(2027, 1, 2)).number == "INV-202701-00002"
    batch = IssuedInvoice.objects.bulk_create([IssuedInvoice(issued_on=date(2026, 12, 1)), IssuedInvoice()])
    assert [invoice.number for invoice in batch] == ["INV-202612-00003", "INV-202701-00003"]
    assert sorted(Sequence.objects.filter(base_name="issued-invoice").values_list("period", flat=True)) == [
        "2026-12",
        "2027-01",
    ]


def test_instant_of_a_date_or_datetime(settings):
    from django_segment_seq.flow.formats import instant_of

    paris = timezone.get_default_timezone()
    assert instant_of(date(2026, 12, 31)) == datetime(2026, 12, 31, tzinfo=paris)
    assert instant_of(datetime(2026, 12, 31, 23, 30, tzinfo=UTC)).isoformat() == "2027-01-01T00:30:00+01:00"
    settings.USE_TZ = False
    assert instant_of(date(2026, 12, 31)) == datetime(2026, 12, 31)
    assert instant_of(datetime(2026, 12, 31, 23, 30, tzinfo=UTC)) == datetime(2027, 1, 1, 0, 30)
    with pytest.raises(TypeError, match="date or datetime"):
        instant_of(20261231)


@pytestmark_db
def test_a_date_is_its_own_day_whatever_time_zone_is_active(clock):
    with timezone.override("Pacific/Kiritimati"):  # UTC+14: its midnight is the day before in Paris
        assert FiscalInvoice.objects.create(issued_on=date(2027, 4, 1)).number == "INV-FY2027-00001"
        assert FiscalInvoice.objects.create(issued_on=date(2027, 3, 31)).number == "INV-FY2026-00001"


@pytestmark_db
def test_a_datetime_counts_in_the_project_time_zone(clock):
    late_utc = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)  # 00:30 on 1 December in Paris
    assert Delivery.objects.create(received_at=late_utc).code == "D20261201-0001"
    with pytest.warns(RuntimeWarning, match="naive datetime"):  # Django's own warning; stored as Paris time
        assert Delivery.objects.create(received_at=datetime(2026, 11, 30, 23, 30)).code == "D20261130-0001"
    assert Delivery.objects.create().code == "D20261122-0001"
    assert Delivery.objects.get(code="D20261201-0001").received_at == late_utc


@pytestmark_db
def test_weekly_quarterly_fiscal_and_callable_periods(clock):
    clock.set("2027-01-03 23:59:59")
    codes = [WeeklyOrder.objects.create().code, QuarterlyReport.objects.create().code]
    clock.advance(seconds=1)
    codes += [WeeklyOrder.objects.create().code, QuarterlyReport.objects.create().code]
    assert codes == ["W2026-W53-00001", "Q2027-Q1-00001", "W2027-W01-00001", "Q2027-Q1-00002"]
    clock.set("2027-03-31 15:59:59")
    assert [FiscalInvoice.objects.create().number, ShiftTicket.objects.create().code] == [
        "INV-FY2026-00001",
        "S20270331B-0001",
    ]
    clock.advance(seconds=1)
    assert ShiftTicket.objects.create().code == "S20270331C-0001"
    clock.set("2027-04-01 00:00")
    assert FiscalInvoice.objects.create().number == "INV-FY2027-00001"
    assert FiscalInvoice.objects.create(issued_on=date(2027, 3, 31)).number == "INV-FY2026-00002"


def bad_period(moment):
    return "2026@11"


def long_period(moment):
    return moment.isoformat()


@pytestmark_db
@pytest.mark.parametrize("reset, message", [(bad_period, "'@'"), (long_period, "at most 10 characters")])
def test_callable_key_that_cannot_name_a_row_is_refused_at_save(clock, reset, message):
    field = SequenceField("bad-period", format="{period}{value}", reset=reset)
    with pytest.raises(ValueError, match=message):
        field._take(object())
    assert not Sequence.objects.exists()


@pytestmark_db
def test_row_name_over_the_limit_is_refused_at_save(clock):
    field = SequenceField("n" * 95, format="{period}{value}", reset=shift_period)
    with pytest.raises(ValueError, match="longer than 100"):
        field._take(object())
    assert not Sequence.objects.exists()
