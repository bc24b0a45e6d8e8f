"""Reading numbers back out of flow-number texts, and refusing formats that cannot be read back."""

from datetime import datetime

import pytest

from django_segment_seq.flow.formats import FlowFormat
from django_segment_seq.flow.parsing import FormatParser, UnparseableFormat
from tests.testapp.models import payment_reference

MOMENT = datetime(2026, 11, 22, 12, 0)


@pytest.mark.parametrize(
    "source, moment, text, number",
    [
        ("OD{date:%Y%m%d}{value:06d}", MOMENT, "OD20261122000123", 123),
        ("OD{date:%Y%m%d}{value:06d}", MOMENT, "OD20261121000999", None),  # another period
        ("OD{date:%Y%m%d}{value:06d}", None, "OD20261121000999", 999),  # any date without a period
        ("INV-{date:%Y}-{value:05d}", None, "INV-2025-00042", 42),
        ("{instance.kind}{date:%Y%m%d}{value:04d}", MOMENT, "RQ202611220017", 17),
        ("T{value:,}", None, "T1,234,567", 1234567),
        ("H{value:#x}", None, "H0xff", 255),
        ("H{value:x}", None, "H0b1f", 0xB1F),
        ("P{value:>6}", None, "P    42", 42),
        ("{value}/{value:04d}", None, "7/0007", 7),
        ("{value}/{value:04d}", None, "7/0008", None),  # two numbers that disagree
        ("P{value:06d}", None, "Q000001", None),
        ("P{value:06d}", None, "", None),
    ],
)
def test_number_is_read_back(source, moment, text, number):
    assert FormatParser(FlowFormat(source), moment).number(text) == number


def test_prefix_runs_to_the_first_placeholder_that_varies():
    assert FormatParser(FlowFormat("OD{date:%Y%m%d}{value:06d}"), MOMENT).prefix == "OD20261122"
    assert FormatParser(FlowFormat("OD{date:%Y%m%d}{value:06d}")).prefix == "OD"


@pytest.mark.parametrize(
    "source, reason",
    [
        (payment_reference, "callable"),
        ("{date:%B}{value}", "%B"),
        ("{value:c}", "cannot be read back"),
        ("{nope}{value}", "invalid"),
        ("{date:%Y}", "no {value}"),
    ],
)
def test_unreadable_formats_are_refused_with_the_reason(source, reason):
    with pytest.raises(UnparseableFormat, match=reason):
        FormatParser(FlowFormat(source))
