"""Back-filling a field that resets per period (and per scope): each row the fill numbers into moves past its own texts.

Empty rows are numbered in the period of their own date, so every such period's row, not only
today's, must first move past the highest number stored in that period, per scope for scoped fields.
"""

from collections import Counter
from datetime import date, datetime
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.db.migrations.state import ProjectState
from django.utils import timezone

from django_segment_seq.backfill import fill_empty
from django_segment_seq.models import Sequence
from django_segment_seq.operations import FillSequenceField
from tests.testapp.models import Company, CompanyDelivery, Delivery, FiscalInvoice

pytestmark = pytest.mark.django_db(transaction=True)


def by_function(model, field_name):
    fill_empty(model, field_name, batch_size=2)


def by_operation(model, field_name):
    # As a data migration runs it: the historical model, inside the schema editor.
    state = ProjectState.from_apps(apps)
    operation = FillSequenceField(model._meta.model_name, field_name, batch_size=2)
    with connection.schema_editor() as editor:
        operation.database_forwards("testapp", editor, state, state)


def by_command(model, field_name):
    label = f"{model._meta.label}.{field_name}"
    call_command("segment_seq", "backfill", label, "--batch-size", "2", stdout=StringIO())


ENTRY_POINTS = [
    pytest.param(by_function, id="fill_empty"),
    pytest.param(by_operation, id="FillSequenceField"),
    pytest.param(by_command, id="command"),
]


def at(day: str, time: str = "09:30") -> datetime:
    return timezone.make_aware(datetime.fromisoformat(f"{day} {time}"), timezone.get_default_timezone())


def add_rows(model, field_name: str, rows: list[tuple[dict, str | int | None]], **others) -> list[int]:
    """Create the rows with their stored values; empty ones (None) are emptied after, as rows from before the field."""
    text = model._meta.get_field(field_name).get_internal_type() == "CharField"
    placeholders = [f"-{i}" if text else -i for i in range(1, len(rows) + 1)]  # given values take no numbers
    objs = model.objects.bulk_create(
        [
            model(**{**others, **attrs, field_name: placeholder if value is None else value})
            for (attrs, value), placeholder in zip(rows, placeholders, strict=True)
        ]
    )
    pks = [obj.pk for obj in objs]
    emptied = [pk for pk, (_attrs, value) in zip(pks, rows, strict=True) if value is None]
    model.objects.filter(pk__in=emptied).update(**{field_name: "" if text else None})
    return pks


def values(model, field_name: str, pks: list[int]) -> list:
    stored = dict(model.objects.filter(pk__in=pks).values_list("pk", field_name))
    return [stored[pk] for pk in pks]


def assert_distinct(texts) -> None:
    repeated = sorted(text for text, times in Counter(texts).items() if times > 1)
    assert not repeated, f"handed out twice: {repeated}"


@pytest.mark.parametrize("backfill", ENTRY_POINTS)
def test_each_day_continues_after_its_own_highest_number(backfill, clock):
    # Five imported rows of 2026-01-01 and three empty ones, mixed with rows of the next day; today is 2026-11-22.
    rows = [({"received_at": at("2026-01-01")}, f"D20260101-{n:04d}") for n in range(1, 6)]
    rows += [({"received_at": at("2026-01-02", "17:00")}, f"D20260102-{n:04d}") for n in range(1, 3)]
    rows += [
        ({"received_at": at("2026-01-01", "10:00")}, None),
        ({"received_at": at("2026-01-02", "08:00")}, None),
        ({"received_at": at("2026-01-01", "23:59")}, None),
        ({"received_at": at("2026-01-02", "00:00")}, None),
        ({"received_at": at("2026-01-01", "00:00")}, None),
    ]
    pks = add_rows(Delivery, "code", rows)
    backfill(Delivery, "code")
    texts = values(Delivery, "code", pks)
    assert_distinct(texts)
    assert texts[7:] == ["D20260101-0006", "D20260102-0003", "D20260101-0007", "D20260102-0004", "D20260101-0008"]


@pytest.mark.parametrize("backfill", ENTRY_POINTS)
def test_each_month_continues_after_the_highest_of_all_its_days(backfill, clock):
    # Reset monthly, texts show the day: every day of a month counts in that month's row.
    company = Company.objects.create(code="ACME")
    stored = [("2026-01-05", "M20260105-0007"), ("2026-01-20", "M20260120-0003"), ("2026-02-03", "M20260203-0002")]
    empty = ["2026-01-01", "2026-01-31", "2026-02-28", "2026-01-15"]
    rows = [({"received_on": date.fromisoformat(day)}, text) for day, text in stored]
    rows += [({"received_on": date.fromisoformat(day)}, None) for day in empty]
    pks = add_rows(CompanyDelivery, "monthly", rows, company=company, code="-", number=0)
    backfill(CompanyDelivery, "monthly")
    texts = values(CompanyDelivery, "monthly", pks)
    assert_distinct(texts)
    assert texts[3:] == ["M20260101-0008", "M20260131-0009", "M20260228-0003", "M20260115-0010"]


def test_a_row_already_ahead_of_its_texts_is_not_moved_down(clock):
    Sequence.objects.create(name="delivery@2026-01-02", base_name="delivery", period="2026-01-02", value=40)
    rows = [
        ({"received_at": at("2026-01-01")}, "D20260101-0005"),
        ({"received_at": at("2026-01-02")}, "D20260102-0007"),
    ]
    rows += [({"received_at": at("2026-01-01")}, None), ({"received_at": at("2026-01-02")}, None)]
    pks = add_rows(Delivery, "code", rows)
    fill_empty(Delivery, "code")
    assert values(Delivery, "code", pks)[2:] == ["D20260101-0006", "D20260102-0041"]


def test_the_text_names_its_period_even_where_the_row_has_no_date(clock):
    # Imported rows whose date column is empty: their texts still belong to the day they show.
    rows = [({"received_at": None}, f"D20260101-{n:04d}") for n in (3, 9)]
    rows += [({"received_at": at("2026-01-01")}, None), ({"received_at": None}, None)]
    pks = add_rows(Delivery, "code", rows)
    fill_empty(Delivery, "code")
    assert values(Delivery, "code", pks)[2:] == ["D20260101-0010", "D20261122-0001"]


def test_a_period_shown_by_its_key_in_a_gapless_fiscal_year(clock):
    stored = [(date(2025, 4 + n, 1), f"INV-FY2025-{n:05d}") for n in range(1, 5)]
    stored.append((date(2026, 6, 1), "INV-FY2026-00009"))
    rows = [({"issued_on": day}, text) for day, text in stored]
    rows.append(({"issued_on": date(2026, 2, 10)}, None))  # FY2025: April 2025 to March 2026
    pks = add_rows(FiscalInvoice, "number", rows)
    fill_empty(FiscalInvoice, "number")
    assert values(FiscalInvoice, "number", pks)[-1] == "INV-FY2025-00005"
    assert Sequence.objects.get(name="fiscal-invoice@FY2025").value == 5


@pytest.fixture
def companies():
    return Company.objects.create(code="ACME"), Company.objects.create(code="GLOBEX")


@pytest.mark.parametrize("backfill", ENTRY_POINTS)
def test_each_scope_and_day_continues_after_its_own_highest_number(backfill, clock, companies):
    acme, globex = companies
    jan1, jan2 = date(2026, 1, 1), date(2026, 1, 2)
    rows = [({"company": acme, "received_on": jan1}, f"D20260101-{n:04d}") for n in range(1, 6)]
    rows += [({"company": acme, "received_on": jan2}, "D20260102-0001")]
    rows += [({"company": globex, "received_on": jan1}, f"D20260101-{n:04d}") for n in range(1, 3)]
    rows += [
        ({"company": acme, "received_on": jan1}, None),
        ({"company": globex, "received_on": jan1}, None),
        ({"company": acme, "received_on": jan2}, None),
        ({"company": acme, "received_on": jan1}, None),
        ({"company": globex, "received_on": jan2}, None),
        ({"company": globex, "received_on": jan1}, None),
        ({"company": acme, "received_on": jan1}, None),
    ]
    pks = add_rows(CompanyDelivery, "code", rows, number=0, monthly="-")
    backfill(CompanyDelivery, "code")
    texts = values(CompanyDelivery, "code", pks)
    for company in companies:
        assert_distinct(CompanyDelivery.objects.filter(company=company).values_list("code", flat=True))
    assert texts[8:] == [
        "D20260101-0006",  # acme, 1 January
        "D20260101-0003",  # globex, 1 January
        "D20260102-0002",  # acme, 2 January
        "D20260101-0007",
        "D20260102-0001",  # globex, 2 January: nothing stored
        "D20260101-0004",
        "D20260101-0008",
    ]


@pytest.mark.parametrize("backfill", ENTRY_POINTS)
def test_each_scope_of_an_integer_field_continues_after_its_own_highest_number(backfill, companies):
    acme, globex = companies
    rows = [({"company": acme}, n) for n in (1, 4, 2)] + [({"company": globex}, 10)]
    rows += [({"company": company}, None) for company in (globex, acme, acme, globex)]
    pks = add_rows(CompanyDelivery, "number", rows, code="-", monthly="-")
    backfill(CompanyDelivery, "number")
    assert values(CompanyDelivery, "number", pks)[4:] == [11, 5, 6, 12]


def test_the_command_names_the_rows_it_moved_first(clock):
    rows = [
        ({"received_at": at(day)}, text)
        for day, text in (("2026-01-01", "D20260101-0005"), ("2026-01-02", "D20260102-0002"))
    ]
    rows += [({"received_at": at(day)}, None) for day in ("2026-01-01", "2026-01-02")]
    add_rows(Delivery, "code", rows)
    out = StringIO()
    call_command("segment_seq", "backfill", "testapp.Delivery.code", stdout=out)
    assert "testapp.Delivery.code: filled 2 rows in 1 batches." in out.getvalue()
    assert (
        "First moved 2 sequence rows past the values stored in testapp.Delivery.code: "
        "delivery@2026-01-01 0 -> 5, delivery@2026-01-02 0 -> 2." in out.getvalue()
    )
