"""Scopes: a counter per company (or any fields of the instance), each in a row of its own, with or without periods."""

import io
import json

import pytest
from django.core import checks
from django.core.management import call_command
from django.db import IntegrityError, models, transaction
from django.test.utils import isolate_apps

from django_segment_seq import SequenceField, SequenceScopeError, fill_sequences, sequence_stats
from django_segment_seq.db.rownames import row_name, scope_of, shown
from django_segment_seq.flow.scopes import encode_text
from django_segment_seq.models import Sequence
from django_segment_seq.sync import sync_sequence
from django_segment_seq.testing import reset_sequences
from tests.conftest import assert_unique
from tests.testapp.models import (
    Company,
    CompanyInvoice,
    CompanyOrder,
    CompanyReceipt,
    LabelledItem,
    ScopedTicket,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def acme():
    return Company.objects.create(code="ACME")


@pytest.fixture
def globex():
    return Company.objects.create(code="GLX")


def test_each_company_counts_from_min_value(clock, acme, globex):
    numbers = [CompanyInvoice.objects.create(company=company).number for company in (acme, globex) * 3]
    assert numbers[0::2] == ["INV-ACME-2026-00001", "INV-ACME-2026-00002", "INV-ACME-2026-00003"]
    assert numbers[1::2] == ["INV-GLX-2026-00001", "INV-GLX-2026-00002", "INV-GLX-2026-00003"]


def test_integer_field_counts_per_scope(acme, globex):
    Sequence.objects.create(name="company-order", min_value=100, step=7)
    got = [(c.pk, CompanyOrder.objects.create(company=c).number) for c in (acme, globex, acme, acme, globex)]
    assert got == [(acme.pk, 100), (globex.pk, 100), (acme.pk, 101), (acme.pk, 102), (globex.pk, 101)]


def test_each_scope_restarts_every_period(clock, acme, globex):
    clock.set("2026-12-31 23:59:59")
    first = [CompanyInvoice.objects.create(company=c).number for c in (acme, acme, globex)]
    clock.advance(seconds=1)
    second = [CompanyInvoice.objects.create(company=c).number for c in (globex, acme)]
    assert first == ["INV-ACME-2026-00001", "INV-ACME-2026-00002", "INV-GLX-2026-00001"]
    assert second == ["INV-GLX-2027-00001", "INV-ACME-2027-00001"]


def test_rows_are_named_by_scope_and_period_and_derived_from_the_base_row(clock, acme, globex):
    Sequence.objects.create(name="company-invoice", step=25, min_value=10)
    CompanyInvoice.objects.create(company=acme)
    row = Sequence.objects.get(name=f"company-invoice@company={acme.pk}/2026")
    assert (row.base_name, row.period, row.step, row.min_value, row.max_value) == (
        "company-invoice",
        "2026",
        25,
        10,
        99_999,  # the format's width
    )
    assert scope_of(row.name, row.base_name, row.period) == f"company={acme.pk}"
    assert Sequence.objects.get(name="company-invoice").value == 9  # the base row hands out nothing
    CompanyOrder.objects.create(company=globex)
    row = Sequence.objects.get(name=f"company-order@company={globex.pk}")
    assert (row.base_name, row.period) == ("company-order", None)


def test_foreign_key_scope_is_its_id(acme):
    by_id = CompanyOrder(company_id=acme.pk)  # the related object never loaded
    by_id.save()
    by_text_id = CompanyOrder(company_id=str(acme.pk))  # as a form or a query string would give it
    by_text_id.save()
    assert (by_id.number, by_text_id.number) == (1, 2)
    assert list(Sequence.objects.filter(base_name="company-order").values_list("name", flat=True)) == [
        f"company-order@company={acme.pk}"
    ]


def test_several_scope_fields(acme, globex):
    made = [
        ScopedTicket.objects.create(company=company, kind=kind)
        for company, kind in [(acme, "bug"), (acme, "bug"), (acme, "Task"), (globex, "bug"), (acme, "Task")]
    ]
    assert [t.number for t in made] == [1, 2, 1, 1, 2]
    names = sorted(Sequence.objects.filter(base_name="scoped-ticket").values_list("name", flat=True))
    assert names == sorted(
        [
            f"scoped-ticket@company={acme.pk},kind=bug",
            f"scoped-ticket@company={acme.pk},kind=%54ask",
            f"scoped-ticket@company={globex.pk},kind=bug",
        ]
    )


def test_text_differing_only_in_case_or_accent_counts_apart():
    """MariaDB's default collations compare case- and accent-insensitively: the names must differ anyway."""
    got = [LabelledItem.objects.create(owner=owner).number for owner in ["abc", "ABC", "Abc", "abç", "abc ", "abc"]]
    assert got == [1, 1, 1, 1, 1, 2]
    assert Sequence.objects.filter(base_name="labelled-item").count() == 5


def test_encoding_keeps_ids_readable_and_reserved_characters_out():
    assert encode_text("42") == "42"
    assert encode_text("a@b/c,d=e%") == "a%40b%2Fc%2Cd%3De%25"
    assert shown("kind=%54ask,owner=a%40b") == "kind=Task, owner=a@b"


def test_an_empty_scope_value_is_a_clear_error():
    with pytest.raises(SequenceScopeError, match="scope field 'owner' is empty"):
        LabelledItem.objects.create(owner=None)
    assert not LabelledItem.objects.exists()
    assert LabelledItem.objects.create(owner="").number == 1  # empty text is a value of its own


def test_a_scope_value_too_long_for_a_row_name_is_an_error_not_a_cut_name():
    fits = "x" * (100 - len("labelled-item@owner="))
    assert LabelledItem.objects.create(owner=fits).number == 1
    assert Sequence.objects.filter(name=f"labelled-item@owner={fits}").exists()
    with pytest.raises(SequenceScopeError, match=r"over the 100 characters") as caught:
        LabelledItem.objects.create(owner=fits + "y")
    assert isinstance(caught.value, ValueError)
    with pytest.raises(SequenceScopeError, match="101 characters"):
        LabelledItem.objects.create(owner="A" * 27)  # 81 characters once encoded, 101 in all
    assert not Sequence.objects.filter(name__startswith="labelled-item@owner=xxxxxxxxy").exists()
    assert LabelledItem.objects.count() == 1


def test_row_name_refuses_rather_than_cuts():
    assert row_name("s", "a=1", "2026") == "s@a=1/2026"
    assert len(row_name("s", "a=" + "1" * 96, None)) == 100
    with pytest.raises(SequenceScopeError):
        row_name("s", "a=" + "1" * 97, None)


def test_bulk_create_takes_one_allocation_per_scope(acme, globex):
    Sequence.objects.create(name="scoped-ticket", step=1000)
    tickets = [ScopedTicket(company=c, kind=k) for _ in range(50) for c in (acme, globex) for k in ("bug", "task")]
    tickets.append(ScopedTicket(company=acme, kind="bug", number=500))  # kept as given
    ScopedTicket.objects.bulk_create(tickets)
    per_scope: dict[tuple[int, str], list[int]] = {}
    for ticket in ScopedTicket.objects.exclude(number=500):
        per_scope.setdefault((ticket.company_id, ticket.kind), []).append(ticket.number)
    assert {key: sorted(numbers) for key, numbers in per_scope.items()} == {
        key: list(range(1, 51))
        for key in [(acme.pk, "bug"), (acme.pk, "task"), (globex.pk, "bug"), (globex.pk, "task")]
    }
    stats = sequence_stats()
    for company in (acme, globex):
        for kind in ("bug", "task"):
            figures = stats[("default", f"scoped-ticket@company={company.pk},kind={kind}")]
            assert (figures.ranges_fetched, figures.handed_out) == (1, 50)
    assert ("default", "scoped-ticket") not in stats  # the base row is only a template


def test_fill_sequences_groups_scopes(acme, globex):
    orders = [CompanyOrder(company=c) for c in (acme, globex, acme)]
    assert fill_sequences(orders) == 3
    assert [o.number for o in orders] == [1, 1, 2]


def test_gapless_per_scope(acme, globex):
    class Rollback(Exception):
        pass

    kept = []
    for attempt, company in enumerate([acme, globex, acme, acme, globex, globex, acme]):
        try:
            with transaction.atomic():
                receipt = CompanyReceipt.objects.create(company=company)
                if attempt % 3 == 2:
                    raise Rollback
            kept.append((company.pk, receipt.number))
        except Rollback:
            pass
    numbers = {company.pk: [n for pk, n in kept if pk == company.pk] for company in (acme, globex)}
    assert numbers == {acme.pk: [1, 2, 3], globex.pk: [1, 2]}
    assert CompanyReceipt.objects.count() == 5


def test_unique_constraint_per_scope_holds(acme):
    CompanyOrder.objects.create(company=acme)
    with pytest.raises(IntegrityError):
        CompanyOrder.objects.create(company=acme, number=1)


def test_reset_sequences_resets_scope_rows(clock, acme, globex):
    for company in (acme, globex, acme):
        CompanyInvoice.objects.create(company=company)
        CompanyOrder.objects.create(company=company)
    reset_sequences("company-invoice")
    CompanyInvoice.objects.all().delete()
    assert CompanyInvoice.objects.create(company=acme).number == "INV-ACME-2026-00001"
    assert CompanyOrder.objects.create(company=acme).number >= 3  # not named, not reset (its cache is gone: a gap)
    reset_sequences()
    CompanyOrder.objects.all().delete()
    assert CompanyOrder.objects.create(company=globex).number == 1


def test_segment_seq_list_groups_scope_rows_under_their_sequence(clock, acme, globex):
    for company in (globex, acme):
        CompanyInvoice.objects.create(company=company)
    clock.advance(days=365)
    CompanyInvoice.objects.create(company=acme)
    out = io.StringIO()
    call_command("segment_seq", "list", stdout=out)
    lines = [line for line in out.getvalue().splitlines() if "company-invoice" in line]
    assert lines[0].startswith("company-invoice ")
    assert [line.split()[0] for line in lines[1:]] == [
        f"company-invoice@company={acme.pk}/2027",
        f"company-invoice@company={acme.pk}/2026",
        f"company-invoice@company={globex.pk}/2026",
    ]
    assert all(line.startswith("  ") for line in lines[1:])
    out = io.StringIO()
    call_command("segment_seq", "list", "--json", stdout=out)
    entry = next(e for e in json.loads(out.getvalue())["sequences"] if e["name"] == "company-invoice")
    assert [(row["scope"], row["period"]) for row in entry["periods"]] == [
        (f"company={acme.pk}", "2027"),
        (f"company={acme.pk}", "2026"),
        (f"company={globex.pk}", "2026"),
    ]


def test_sync_moves_each_scopes_row(acme):
    # more in tests/test_seed_rules.py; backfill moves each scope's rows itself: tests/test_backfill_periods.py
    CompanyOrder.objects.bulk_create([CompanyOrder(company=acme, number=n) for n in (3, 900)])
    (moved,) = sync_sequence(CompanyOrder, "number").rows
    assert (moved.row_name, moved.after) == (f"company-order@company={acme.pk}", 900)


# Checks


def scope_check_ids(scope, *, field_options=None, name="seq", extra=None):
    """The django_segment_seq check ids (errors and warnings) of a model with a scoped SequenceField."""

    @isolate_apps("tests.testapp")
    def build():
        attrs = {
            "__module__": __name__,
            "Meta": type("Meta", (), {"app_label": "testapp"}),
            "company": models.ForeignKey("testapp.Company", on_delete=models.CASCADE),
            "kind": models.CharField(max_length=6),
            "weight": models.FloatField(default=0),
            "tags": models.ManyToManyField("testapp.Company", related_name="+"),
            "number": SequenceField(name, scope=scope, **(field_options or {})),
            **(extra or {}),
        }
        model = type("ScopedModel", (models.Model,), attrs)
        return model._meta.get_field("number").check()

    return sorted(m.id for m in build() if m.id.startswith("django_segment_seq"))


@pytest.mark.parametrize(
    "scope, options",
    [
        (["company"], {}),
        ("company", {}),
        (["company", "kind"], {}),
        (("company_id",), {}),
        (["company"], {"format": "INV-{date:%Y}-{value:05d}", "reset": "yearly"}),
        (["company"], {"format": "{instance.company.code}-{value:05d}", "unique": True}),
        (["company"], {"gapless": True}),
    ],
)
def test_valid_scopes_pass(scope, options):
    assert scope_check_ids(scope, field_options=options) == []


@pytest.mark.parametrize(
    "scope, expected",
    [
        ([], "E023"),
        ([1], "E023"),
        ({"company": 1}, "E023"),
        (["kind", "kind"], "E032"),
        (["nope"], "E033"),
        (["tags"], "E033"),
        (["number"], "E033"),
        (["id"], "E033"),
        (["weight"], "E033"),
    ],
)
def test_bad_scope_fields_are_refused(scope, expected):
    assert scope_check_ids(scope) == [f"django_segment_seq.{expected}"]


def test_sequence_name_without_room_for_the_scope_is_refused():
    assert scope_check_ids(["company"], name="s" * 90) == []
    assert scope_check_ids(["company"], name="s" * 91) == ["django_segment_seq.E024"]
    assert scope_check_ids(["company"], name="a@b") == ["django_segment_seq.E024"]
    long_with_period = {"format": "{date:%Y}{value:05d}", "reset": "yearly"}
    assert scope_check_ids(["company"], name="s" * 80, field_options=long_with_period) == ["django_segment_seq.E024"]


def test_scoped_integer_primary_key_is_refused():
    ids = scope_check_ids(["company"], field_options={"primary_key": True})
    assert "django_segment_seq.E026" in ids


def test_unique_on_a_scoped_field_is_a_warning_with_a_hint():
    @isolate_apps("tests.testapp")
    def build():
        class Model(models.Model):
            company = models.ForeignKey("testapp.Company", on_delete=models.CASCADE)
            number = SequenceField("seq", scope=["company"], unique=True)

            class Meta:
                app_label = "testapp"

        return Model._meta.get_field("number").check()

    messages = [m for m in build() if m.id.startswith("django_segment_seq")]
    assert [(type(m), m.id) for m in messages] == [(checks.Warning, "django_segment_seq.W002")]
    assert "UniqueConstraint(fields=['company', 'number']" in messages[0].hint
    assert scope_check_ids(["company"], field_options={"format": "X{value:05d}", "unique": True}) == [
        "django_segment_seq.W002"
    ]


def test_a_sequence_scoped_differently_in_two_fields_is_refused():
    ids = scope_check_ids(["company"], extra={"other": SequenceField("seq", scope=["kind"])})
    assert ids == ["django_segment_seq.E025"]
    assert scope_check_ids(None, extra={"other": SequenceField("seq", scope=["kind"])}) == ["django_segment_seq.E025"]
    assert scope_check_ids(["kind"], extra={"other": SequenceField("seq", scope="kind")}) == []
    assert scope_check_ids(["company_id"], extra={"other": SequenceField("seq", scope="company")}) == []


def test_deconstruct_keeps_the_scope():
    field = CompanyInvoice._meta.get_field("number")
    _name, _path, _args, kwargs = field.deconstruct()
    assert kwargs["scope"] == ["company"]
    rebuilt = SequenceField(*_args, **kwargs)
    assert rebuilt.scope == ["company"] and rebuilt.deconstruct()[3] == kwargs
    assert "scope" not in SequenceField("plain").deconstruct()[3]


def test_numbers_are_unique_per_scope_across_many_saves(acme, globex):
    Sequence.objects.create(name="company-order", step=3)
    got = {acme.pk: [], globex.pk: []}
    for i in range(40):
        company = acme if i % 3 else globex
        got[company.pk].append(CompanyOrder.objects.create(company=company).number)
    for numbers in got.values():
        assert assert_unique(numbers) == list(range(1, len(numbers) + 1))


# Admin


def test_admin_lists_scope_rows_under_their_sequence_with_the_scope_shown(admin_client, clock, acme):
    from django.urls import reverse

    from tests.test_admin import cell

    url = "/admin/django_segment_seq/sequence/"
    Sequence.objects.create(name="daily@2026-11-22", base_name="daily", period="2026-11-22")
    assert "column-scope_shown" not in admin_client.get(url).content.decode()  # period rows only so far
    LabelledItem.objects.create(owner="Bob@home")
    CompanyInvoice.objects.create(company=acme)
    page = admin_client.get(url).content.decode()
    assert cell(page, "labelled-item@owner=%42ob%40home", "scope_shown") == "owner=Bob@home"
    invoice_row = f"company-invoice@company={acme.pk}/2026"
    assert cell(page, invoice_row, "scope_shown") == f"company={acme.pk}"
    assert cell(page, invoice_row, "period_shown") == "2026"
    assert cell(page, "daily@2026-11-22", "scope_shown") == ""
    filtered = admin_client.get(url, {"sequence": "company-invoice"}).content.decode()
    assert "company-invoice</a>" in filtered and invoice_row in filtered and "labelled-item@" not in filtered
    row = Sequence.objects.get(name=invoice_row)
    page = admin_client.get(reverse("admin:django_segment_seq_sequence_change", args=[row.pk])).content.decode()
    assert "field-scope_shown" in page and f"company={acme.pk}" in page and "field-period" in page
    base = Sequence.objects.get(name="company-invoice")
    page = admin_client.get(reverse("admin:django_segment_seq_sequence_change", args=[base.pk])).content.decode()
    assert "field-scope_shown" not in page


def test_segment_seq_show_names_the_scope(clock, acme, globex):
    for company in (globex, acme):
        CompanyInvoice.objects.create(company=company)
    out = io.StringIO()
    call_command("segment_seq", "show", "company-invoice", stdout=out)
    text = out.getvalue()
    assert "Scopes, each with its periods newest first:" in text
    assert text.index(f"company-invoice@company={acme.pk}/2026") < text.index(
        f"company-invoice@company={globex.pk}/2026"
    )
    out = io.StringIO()
    call_command("segment_seq", "show", f"company-invoice@company={acme.pk}/2026", stdout=out)
    details = dict(line.split(None, 1) for line in out.getvalue().splitlines()[1:] if line.startswith("  "))
    assert (details["sequence"], details["scope"], details["period"]) == (
        "company-invoice",
        f"company={acme.pk}",
        "2026",
    )


def test_an_exhausted_scope_says_which_and_leaves_the_others_alone(acme, globex):
    from django_segment_seq import SequenceExhausted

    Sequence.objects.create(name="company-order", max_value=2, step=1)
    assert [CompanyOrder.objects.create(company=acme).number for _ in range(2)] == [1, 2]
    with pytest.raises(SequenceExhausted, match=rf"scope company={acme.pk}, is exhausted") as caught:
        CompanyOrder.objects.create(company=acme)
    assert caught.value.name == f"company-order@company={acme.pk}"
    assert CompanyOrder.objects.create(company=globex).number == 1
