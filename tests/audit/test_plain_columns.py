"""The desk's tools on a plain column whose numbers a rule made in code (next_text): `segment_seq gaps`, `backfill`
and void(), given the rule (--rule module.RULE, or the label of a SequenceField the rule is shared with)."""

import re
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import CommandError, call_command

from django_segment_seq import next_text
from django_segment_seq.audit.exceptions import OtherSeries, UnknownField
from django_segment_seq.audit.gaps import gap_report
from django_segment_seq.audit.void import void
from django_segment_seq.models import Sequence
from tests.seed_models import LEDGER_INVOICE, LedgerEntity, LedgerInvoice, YearlyDoc

pytestmark = pytest.mark.django_db(transaction=True)

LEDGER = "testapp.LedgerInvoice.number"
RULE = "tests.seed_models.LEDGER_INVOICE"
COLUMNS = {"e": "entity_model", "fy": "fiscal_year"}
SCOPE_FROM = ["--scope-from", "e=entity_model", "--scope-from", "fy=fiscal_year"]


def segment_seq(*args: str) -> str:
    out = StringIO()
    call_command("segment_seq", *args, stdout=out)
    return out.getvalue()


def invoice(entity: LedgerEntity, year: int, *, kept: bool = True) -> str:
    """An invoice numbered in code, as the ledger does; `kept=False` is one whose row was deleted since (a gap)."""
    number = next_text(LEDGER_INVOICE, scope={"e": entity, "fy": year}, instance=SimpleNamespace(fiscal_year=year))
    if kept:
        LedgerInvoice.objects.create(entity_model=entity, fiscal_year=year, number=number)
    return number


@pytest.fixture
def entity() -> LedgerEntity:
    return LedgerEntity.objects.create(name="A")


def test_gaps_of_a_plain_column_given_its_rule(entity):
    """Before this: "testapp.LedgerInvoice.number is a CharField, not a SequenceField"."""
    for kept in (True, True, False, True, False, False, True):
        invoice(entity, 2024, kept=kept)
    invoice(entity, 2025)
    out = segment_seq("gaps", LEDGER, "--rule", RULE, *SCOPE_FROM)
    assert f"Scope e={entity.pk}, fy=2024: 1 \N{EN DASH} 7, 4 stored; 0 voided, 3 unexplained" in out
    assert "unexplained  3, 5\N{EN DASH}6" in out
    assert f"Scope e={entity.pk}, fy=2025: 1, 1 stored; no gaps." in out
    report = gap_report(LEDGER, rule=LEDGER_INVOICE, scope_from=COLUMNS, scope=f"e={entity.pk},fy=2024")
    assert [(series.first, series.highest, series.unexplained_count) for series in report.series] == [(1, 7, 3)]


def test_gaps_of_a_plain_column_by_the_label_of_the_field_its_rule_is_shared_with():
    """SITE_ORDER is testapp.SiteOrder.number's rule, scoped by site; the plain column's site is in `entity`."""
    YearlyDoc.objects.bulk_create(
        YearlyDoc(entity=site, number=text)
        for site, text in ((1, "2026-000001"), (1, "2026-000004"), (2, "2025-000002"))
    )
    out = segment_seq(
        "gaps", "testapp.YearlyDoc.number", "--rule", "testapp.SiteOrder.number", "--scope-from", "site=entity"
    )
    assert "Period 2026, scope site=1: 1 \N{EN DASH} 4, 2 stored; 0 voided, 2 unexplained" in out
    assert "Period 2025, scope site=2: 2, 1 stored; no gaps." in out


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "is a CharField, not a SequenceField. Give the rule its numbers were made by"),
        (["--rule", "tests.seed_models.NOTHING"], "names neither a SequenceField"),
        (["--rule", "testapp.Order.order_no", "--scope-from", "x=number"], "which the rule does not scope by"),
        (["--rule", RULE], "neither the stored texts nor a column of the model named so give e, fy"),
        (["--rule", RULE, "--scope-from", "e=nothing"], "has no column 'nothing'"),
    ],
)
def test_a_plain_column_without_its_rule_is_a_command_error(args, message):
    with pytest.raises(CommandError, match=message):
        segment_seq("gaps", LEDGER, *args)


def test_void_a_number_of_a_plain_column(entity):
    for kept in (True, True, False, True):
        invoice(entity, 2024, kept=kept)
    scope = {"e": entity, "fy": 2024}
    voided = void(LEDGER, "I-2024-0000000003", "spoiled form", scope=scope, rule=RULE, scope_from=COLUMNS)
    assert (voided.label, voided.number, voided.sequence) == (LEDGER, 3, f"djl-invoice@e={entity.pk},fy=2024")
    out = segment_seq("gaps", LEDGER, "--rule", RULE, *SCOPE_FROM)
    assert "voided       3  spoiled form" in out and "1 voided, 0 unexplained" in out
    with pytest.raises(OtherSeries, match=re.escape("shows '2024' for {instance.fiscal_year}")):
        void(LEDGER, "I-2024-0000000002", "x", scope={"e": entity, "fy": 2025}, rule=LEDGER_INVOICE, scope_from=COLUMNS)
    with pytest.raises(UnknownField, match="not a SequenceField"):
        void(LEDGER, "I-2024-0000000002", "x", scope=scope)


def test_backfill_of_a_plain_column_seeds_then_numbers_each_row_in_its_scope(entity):
    other = LedgerEntity.objects.create(name="B")
    LedgerInvoice.objects.bulk_create(
        LedgerInvoice(entity_model=entity, fiscal_year=2024, number=f"I-2024-{n:010d}") for n in range(1, 6)
    )
    empty = [(entity, 2024), (other, 2024), (entity, 2024), (entity, 2025)]
    LedgerInvoice.objects.bulk_create(LedgerInvoice(entity_model=e, fiscal_year=year) for e, year in empty)
    out = segment_seq("backfill", LEDGER, "--rule", RULE, *SCOPE_FROM)
    assert "filled 4 rows in 1 batches" in out
    assert f"First moved 1 sequence rows past the values stored in {LEDGER}: djl-invoice@e={entity.pk},fy=2024" in out
    numbers = list(LedgerInvoice.objects.order_by("pk").values_list("entity_model", "fiscal_year", "number"))[5:]
    assert numbers == [
        (entity.pk, 2024, "I-2024-0000000006"),
        (other.pk, 2024, "I-2024-0000000001"),
        (entity.pk, 2024, "I-2024-0000000007"),
        (entity.pk, 2025, "I-2025-0000000001"),
    ]
    assert "no empty values" in segment_seq("backfill", LEDGER, "--rule", RULE, *SCOPE_FROM)
    assert Sequence.objects.get(name=f"djl-invoice@e={entity.pk},fy=2024").value == 7


def test_backfill_of_a_plain_column_without_its_rule_says_to_give_it():
    LedgerInvoice.objects.bulk_create([])
    with pytest.raises(CommandError, match=r"not a SequenceField\. Give the rule its numbers are made by"):
        segment_seq("backfill", LEDGER)
