"""Seeding a scoped or periodic sequence (`segment_seq sync`): every row of a period and scope that stored numbers
belong to moves above them, missing rows are made at that value, the command lists them; a seed that would move
only the sequence's own row of a scoped or periodic sequence is refused."""

from datetime import date
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import CommandError, call_command

from django_segment_seq import next_text
from django_segment_seq.models import Sequence
from django_segment_seq.sync import sync_sequence
from tests.seed_models import LEDGER_INVOICE, LEDGER_PATTERN, YEARLY_DOC, LedgerEntity, LedgerInvoice, YearlyDoc
from tests.testapp.models import Company, CompanyOrder, SiteOrder

pytestmark = pytest.mark.django_db(transaction=True)

LEDGER = "testapp.LedgerInvoice.number"
RULE = "tests.seed_models.LEDGER_INVOICE"


def segment_seq(*args: str) -> str:
    out = StringIO()
    call_command("segment_seq", *args, stdout=out)
    return out.getvalue()


def ledger(stored: dict[tuple[str, int], int]) -> dict[str, LedgerEntity]:
    """Entities A and B, and invoices numbered 1..N for each (entity, year) of `stored`, as texts made elsewhere."""
    entities = {name: LedgerEntity.objects.create(name=name) for name in ("A", "B")}
    LedgerInvoice.objects.bulk_create(
        LedgerInvoice(entity_model=entities[name], fiscal_year=year, number=f"I-{year}-{n:010d}")
        for (name, year), count in stored.items()
        for n in range(1, count + 1)
    )
    return entities


def next_invoice(entity: LedgerEntity, year: int) -> str:
    return next_text(LEDGER_INVOICE, scope={"e": entity, "fy": year}, instance=SimpleNamespace(fiscal_year=year))


def row_of(entity: LedgerEntity, year: int) -> str:
    return f"djl-invoice@e={entity.pk},fy={year}"


def test_a_ledger_seeded_by_its_rule_numbers_each_entity_and_year_above_its_stored_texts():
    entities = ledger({("A", 2024): 5, ("A", 2025): 2, ("B", 2024): 3})
    a, b = entities["A"], entities["B"]
    out = segment_seq("sync", LEDGER, "--rule", RULE, "--pattern", LEDGER_PATTERN, "--scope-from", "e=entity_model")
    assert "3 rows of its periods and scopes hold numbers stored in testapp.LedgerInvoice.number" in out
    for entity, year, highest in ((a, 2024, 5), (a, 2025, 2), (b, 2024, 3)):
        assert row_of(entity, year) in out
        assert Sequence.objects.get(name=row_of(entity, year)).value == highest
    assert "3 rows created, 0 moved, 0 already past" in out and "The rows are new" in out
    assert next_invoice(a, 2024) == "I-2024-0000000006"
    assert next_invoice(a, 2025) == "I-2025-0000000003"
    assert next_invoice(b, 2024) == "I-2024-0000000004"
    assert next_invoice(b, 2025) == "I-2025-0000000001"  # no stored number: the row starts at the minimum
    assert not Sequence.objects.filter(name="djl-invoice", value__gt=0).exists()  # the own row is not a counter


def test_a_scope_the_texts_do_not_show_is_read_from_a_named_column():
    entities = ledger({("A", 2024): 4, ("B", 2025): 2})
    report = sync_sequence(
        LedgerInvoice, "number", rule=LEDGER_INVOICE, scope_from={"e": "entity_model_id", "fy": "fiscal_year"}
    )
    assert [(row.row_name, row.after) for row in report.rows] == sorted(
        [(row_of(entities["A"], 2024), 4), (row_of(entities["B"], 2025), 2)]
    )
    again = segment_seq(
        "sync", LEDGER, "--rule", RULE, "--scope-from", "e=entity_model", "--scope-from", "fy=fiscal_year"
    )
    assert "0 rows created, 0 moved, 2 already past" in again


def test_the_readmes_command_on_a_scoped_sequence_is_refused_naming_its_rows_and_the_commands():
    """The README's own command before this: exit 0, "every number from now on is above", and 3 repeated numbers."""
    ledger({("A", 2024): 5, ("A", 2025): 2, ("B", 2024): 3})
    with pytest.raises(CommandError) as refused:
        segment_seq("sync", LEDGER, "--sequence", "djl-invoice", "--pattern", r"I-[0-9]{4}-(?P<value>[0-9]+)")
    message = str(refused.value)
    assert "counts in a row per e, fy (djl-invoice@e=…,fy=…)" in message, message
    assert f"segment_seq sync {LEDGER} --rule " in message
    assert "LEDGER_INVOICE --scope-from e=COLUMN --scope-from fy=COLUMN" in message
    assert "segment_seq set djl-invoice --scope e=VALUE --scope fy=VALUE --min N" in message
    assert not Sequence.objects.exists()


def test_a_yearly_rule_seeded_by_its_format_moves_each_years_row(clock):
    """Before this, the seed moved the sequence's own row to 50, and the next two texts were 2026-000001 twice."""
    YearlyDoc.objects.bulk_create(YearlyDoc(number=f"2026-{n:06d}") for n in range(1, 51))
    YearlyDoc.objects.bulk_create(YearlyDoc(number=f"2025-{n:06d}") for n in range(1, 8))
    out = segment_seq(
        "sync", "testapp.YearlyDoc.number", "--sequence", "yearly-doc", "--format", "{date:%Y}-{value:06d}"
    )
    assert next_text(YEARLY_DOC) == "2026-000051"  # before: 2026-000001, stored already
    assert next_text(YEARLY_DOC, at=date(2025, 3, 1)) == "2025-000008"
    assert "read by the rule tests.seed_models.YEARLY_DOC" in out
    assert "yearly-doc@2025" in out and "yearly-doc@2026" in out
    stored = set(YearlyDoc.objects.values_list("number", flat=True))
    assert not stored & {next_text(YEARLY_DOC) for _ in range(5)}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--format", "{date:%Y}-{value:06d}"], "shows a date: a sequence that resets counts each period"),
        (["--format", "W{period}-{value:06d}"], "shows a period"),
        (["--pattern", r"(?P<period>[0-9]{4})-(?P<value>[0-9]+)"], "the pattern names period"),
    ],
)
def test_a_seed_of_an_unknown_sequence_that_shows_periods_is_refused(args, message):
    YearlyDoc.objects.bulk_create(YearlyDoc(number=f"2026-{n:06d}") for n in range(1, 4))
    with pytest.raises(CommandError, match=message) as refused:
        segment_seq("sync", "testapp.YearlyDoc.number", "--sequence", "unknown-doc", *args)
    assert "--rule module.RULE" in str(refused.value)
    assert not Sequence.objects.exists()


def test_a_sequence_with_period_rows_is_not_seeded_by_its_own_row():
    Sequence.objects.create(name="unknown-doc@2025", base_name="unknown-doc", period="2025")
    YearlyDoc.objects.bulk_create(YearlyDoc(number=str(n)) for n in range(1, 4))
    with pytest.raises(CommandError, match=r"counts in rows per period or scope \(unknown-doc@2025\)"):
        segment_seq("sync", "testapp.YearlyDoc.number", "--sequence", "unknown-doc")
    assert not Sequence.objects.filter(name="unknown-doc").exists()


def test_a_periodic_rule_read_by_a_pattern_needs_its_period():
    YearlyDoc.objects.create(number="2026-000001")
    with pytest.raises(CommandError, match="names no group 'period'"):
        segment_seq(
            "sync",
            "testapp.YearlyDoc.number",
            "--rule",
            "tests.seed_models.YEARLY_DOC",
            "--pattern",
            r"[0-9]{4}-([0-9]+)",
        )
    out = segment_seq(
        "sync", "testapp.YearlyDoc.number", "--rule", "tests.seed_models.YEARLY_DOC",
        "--pattern", r"(?P<period>[0-9]{4})-(?P<value>[0-9]+)",
    )  # fmt: skip
    assert "yearly-doc@2026" in out and Sequence.objects.get(name="yearly-doc@2026").value == 1


def test_scope_values_the_texts_show_name_their_rows():
    YearlyDoc.objects.bulk_create(YearlyDoc(number=text) for text in ("E7-00012", "E7-00003", "E12-00004", "X-1"))
    out = segment_seq("sync", "testapp.YearlyDoc.number", "--rule", "tests.seed_models.ENTITY_ORDER")
    assert "1 stored values do not match the number's shape" in out
    assert {row.name: row.value for row in Sequence.objects.filter(base_name="entity-order")} == {
        "entity-order@entity=12": 4,
        "entity-order@entity=7": 12,
    }


def test_a_scoped_periodic_sequence_field_moves_each_scope_and_years_row(clock):
    """Before this, sync refused a scoped field ("sync moves one counter per column")."""
    texts = [(1, "2025-000007"), (1, "2026-000003"), (2, "2026-000010"), (2, "2026-000002")]
    SiteOrder.objects.bulk_create(SiteOrder(site=site, number=text) for site, text in texts)
    out = segment_seq("sync", "testapp.SiteOrder.number")
    assert {row.name: row.value for row in Sequence.objects.filter(base_name="site-order")} == {
        "site-order@site=1/2025": 7,
        "site-order@site=1/2026": 3,
        "site-order@site=2/2026": 10,
    }
    assert "site-order@site=1/2025" in out and "restart them" in out
    assert SiteOrder.objects.create(site=2).number == "2026-000011"
    assert SiteOrder.objects.create(site=1).number == "2026-000004"


def test_a_scoped_integer_field_moves_each_scopes_row():
    acme, globex = Company.objects.create(code="acme"), Company.objects.create(code="globex")
    CompanyOrder.objects.bulk_create(
        [
            CompanyOrder(company=acme, number=40),
            CompanyOrder(company=acme, number=7),
            CompanyOrder(company=globex, number=3),
        ]
    )
    report = sync_sequence(CompanyOrder, "number")
    assert [(row.row_name, row.after) for row in report.rows] == sorted(
        [(f"company-order@company={acme.pk}", 40), (f"company-order@company={globex.pk}", 3)]
    )
    assert CompanyOrder.objects.create(company=acme).number == 41
