"""manage.py segment_seq gaps: the report as text and JSON, ranges shown compactly, and errors as CommandError."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_segment_seq import next_values, void
from tests.testapp.models import Company, CompanyOrder, DailyOrder, MonthlyTicket, Order, ShopOrder, WeeklyOrder

pytestmark = pytest.mark.django_db(transaction=True)


def gaps(*args: str) -> str:
    out = StringIO()
    call_command("segment_seq", "gaps", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def invoices():
    """Orders 1000 to 1100 with 1020 and 1041 to 1043 missing, 1042 voided."""
    next_values("order", 1100)
    Order.objects.bulk_create([Order(order_no=n) for n in range(1000, 1101) if n not in (1020, 1041, 1042, 1043)])
    void("testapp.Order.order_no", 1042, "cancelled draft", user="alice")


def test_text_report_shows_ranges_and_reasons(invoices):
    assert gaps("testapp.Order.order_no").splitlines() == [
        "All numbers: 1000 \u2013 1100, 97 stored; 1 voided, 3 unexplained",
        "  voided       1042  cancelled draft",
        "  unexplained  1020, 1041, 1043",
        "testapp.Order.order_no: 1 voided, 3 unexplained in 1 series.",
    ]


def test_consecutive_unexplained_numbers_are_one_range():
    Order.objects.bulk_create([Order(order_no=n) for n in (1, 2, 6, 9)])
    assert "  unexplained  3\u20135, 7\u20138" in gaps("testapp.Order.order_no").splitlines()


def test_json_report(invoices):
    data = json.loads(gaps("testapp.Order.order_no", "--json"))
    assert (data["field"], data["voided"], data["unexplained"], data["unreadable"]) == (
        "testapp.Order.order_no",
        1,
        3,
        0,
    )
    [series] = data["series"]
    assert (series["first"], series["highest"], series["stored"]) == (1000, 1100, 97)
    assert series["voided"] == [{"first": 1042, "last": 1042, "reason": "cancelled draft"}]
    assert series["unexplained"] == [
        {"first": 1020, "last": 1020},
        {"first": 1041, "last": 1041},
        {"first": 1043, "last": 1043},
    ]


def test_a_gapless_field_shows_no_gaps():
    Order.objects.bulk_create([Order(order_no=n) for n in range(1, 11)])
    assert gaps("testapp.Order.order_no").splitlines() == [
        "All numbers: 1 \u2013 10, 10 stored; no gaps.",
        "testapp.Order.order_no: 0 voided, 0 unexplained in 1 series.",
    ]
    assert json.loads(gaps("testapp.Order.order_no", "--json"))["series"][0]["unexplained"] == []


def test_an_empty_column():
    assert gaps("testapp.Order.order_no").strip() == "testapp.Order.order_no: no numbers stored."


def test_formatted_field_per_period(clock):
    texts = [f"OD20261122{n:06d}" for n in (1, 2, 5)] + [f"OD20261123{n:06d}" for n in (1, 2)]
    DailyOrder.objects.bulk_create([DailyOrder(order_no=text) for text in texts])
    next_values("daily-order@2026-11-22", 5)
    void("testapp.DailyOrder.order_no", "OD20261122000004", "spoiled form")
    assert gaps("testapp.DailyOrder.order_no").splitlines() == [
        "Period 2026-11-22: 1 \u2013 5, 3 stored; 1 voided, 1 unexplained",
        "  voided       4  spoiled form",
        "  unexplained  3",
        "Period 2026-11-23: 1 \u2013 2, 2 stored; no gaps.",
        "testapp.DailyOrder.order_no: 1 voided, 1 unexplained in 2 series.",
    ]
    only = json.loads(gaps("testapp.DailyOrder.order_no", "--period", "2026-11-23", "--json"))
    assert [series["period"] for series in only["series"]] == ["2026-11-23"]


def test_a_period_keeps_its_capitals(clock):
    WeeklyOrder.objects.bulk_create([WeeklyOrder(code=f"W2026-W47-{n:05d}") for n in (1, 3)])
    assert gaps("testapp.WeeklyOrder.code").startswith("Period 2026-W47: 1 \u2013 3, 2 stored; 0 voided, 1 unexplained")


def test_scoped_field_per_scope():
    acme, globex = Company.objects.create(code="acme"), Company.objects.create(code="globex")
    CompanyOrder.objects.bulk_create(
        [CompanyOrder(company=acme, number=n) for n in (1, 3)]
        + [CompanyOrder(company=globex, number=n) for n in (1, 2)]
    )
    out = gaps("testapp.CompanyOrder.number").splitlines()
    assert f"Scope company={acme.pk}: 1 \u2013 3, 2 stored; 0 voided, 1 unexplained" in out
    assert f"Scope company={globex.pk}: 1 \u2013 2, 2 stored; no gaps." in out
    only = json.loads(gaps("testapp.CompanyOrder.number", "--scope", f"company={acme.pk}", "--json"))
    assert [(s["scope"], s["unexplained"]) for s in only["series"]] == [
        (f"company={acme.pk}", [{"first": 2, "last": 2}])
    ]


@pytest.mark.parametrize(
    ("label", "message"),
    [
        ("testapp.Order", "APP_LABEL.Model.field"),
        ("testapp.Nothing.number", "Nothing"),
        ("testapp.Company.code", "not a SequenceField"),
        ("testapp.Payment.ref", "cannot be read back.*gaps cannot be found"),
    ],
)
def test_errors_are_command_errors(label, message):
    with pytest.raises(CommandError, match=message):
        gaps(label)


def test_a_period_or_scope_the_field_does_not_have_is_an_error():
    with pytest.raises(CommandError, match="counts without periods"):
        gaps("testapp.Order.order_no", "--period", "2026")
    with pytest.raises(CommandError, match="not scoped"):
        gaps("testapp.Order.order_no", "--scope", "company=1")


# Issue 29, item 7. Before: LEGACY-0001 was left out (unreadable 0) and the repeated M2026-11-02 folded into
# "4 stored" without a word.
def test_texts_of_another_prefix_are_unreadable_and_repeats_are_said(clock):
    texts = ["M2026-11-01", "M2026-11-02", "M2026-11-02", "M2026-11-04", "LEGACY-0001"]
    MonthlyTicket.objects.bulk_create([MonthlyTicket(code=text) for text in texts])
    report = json.loads(gaps("testapp.MonthlyTicket.code", "--json"))
    assert (report["unreadable"], report["repeated"]) == (1, 1)
    (series,) = report["series"]
    assert (series["stored"], series["repeated"], series["unexplained"]) == (4, 1, [{"first": 3, "last": 3}])
    text = gaps("testapp.MonthlyTicket.code").splitlines()
    assert text[0].startswith("1 stored texts could not be read back")
    assert text[1] == "Period 2026-11: 1 \u2013 4, 4 stored (1 repeating a number); 0 voided, 1 unexplained"
    assert text[-1].endswith("1 unexplained, 1 stored more than once, 1 unreadable in 1 series.")


def test_repeated_integers_are_said():
    Order.objects.bulk_create([Order(order_no=n) for n in (1, 2, 2, 3)])
    assert json.loads(gaps("testapp.Order.order_no", "--json"))["series"][0]["repeated"] == 1


# Issue 29, item 10. Before: both printed "...: no numbers stored." and exited 0.
def test_a_period_or_scope_that_names_no_series_is_a_command_error(clock):
    DailyOrder.objects.create()
    with pytest.raises(CommandError, match="period 'nonsense' names no series"):
        gaps("testapp.DailyOrder.order_no", "--period", "nonsense")
    CompanyOrder.objects.create(company=Company.objects.create(code="acme"))
    with pytest.raises(CommandError, match="scope 'acme' names no series"):
        gaps("testapp.CompanyOrder.number", "--scope", "acme")
    assert "no gaps" in gaps("testapp.DailyOrder.order_no", "--period", "2026-11-22")


# Issue 29, item 2. Before: under a changed key the three orders read as three large numbers, with millions
# "unexplained" between them.
def test_texts_concealed_under_a_key_not_configured_are_unreadable(settings):
    call_command("migrate", "django_segment_seq", verbosity=0)
    for _ in range(3):
        ShopOrder.objects.create()
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "CONCEAL_KEY": "ffeeddccbbaa99887766554433221100"}
    report = json.loads(gaps("testapp.ShopOrder.number", "--json"))
    assert (report["unreadable"], report["series"], report["unexplained"]) == (3, [], 0)
    assert "CONCEAL_KEY_FALLBACKS" in report["unreadable_why"]
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "CONCEAL_KEY_FALLBACKS": ["00112233445566778899aabbccddeeff"]}
    report = json.loads(gaps("testapp.ShopOrder.number", "--json"))
    assert (report["unreadable"], report["series"][0]["first"], report["series"][0]["highest"]) == (0, 1, 3)
