"""Formats of flow numbers: the template mini-language, width caps, widest output, and formatted fields on real models."""

import pytest
from django.db import models

from django_segment_seq import SequenceField
from django_segment_seq.fields import FormattedSequenceField
from django_segment_seq.formatting import FlowFormat, width_cap
from django_segment_seq.models import Sequence
from tests.testapp.models import DailyOrder, KindTicket, Parcel, Payment


@pytest.mark.parametrize(
    "spec, cap",
    [("04d", 9999), ("06", 999_999), ("0>3", 999), ("0=5d", 99_999), ("+05d", 9999), ("04x", 0xFFFF), ("d", None), ("6d", None), ("", None)],
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
    name, path, args, kwargs = field.deconstruct()
    assert path == "django_segment_seq.fields.SequenceField"
    assert kwargs == {
        "sequence_name": "x", "format": "A{date:%Y}{value:04d}", "reset": "yearly", "gapless": True, "max_length": 20
    }
    rebuilt = SequenceField(*args, **kwargs)
    assert isinstance(rebuilt, FormattedSequenceField) and rebuilt.deconstruct() == field.deconstruct()


pytestmark_db = pytest.mark.django_db(transaction=True)


@pytestmark_db
def test_date_and_zero_padded_value(clock):
    assert [DailyOrder.objects.create().order_no for _ in range(3)] == [
        "OD20261122000001", "OD20261122000002", "OD20261122000003"
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
