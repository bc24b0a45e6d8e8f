"""`segment_seq set` on one scope's and period's row: named by the rule's own spelling (--scope, --period) or by the
row's name, created from the sequence's row when missing; processes running on it go above the new minimum at their
next range fetch, as for the sequence's own row."""

import subprocess
import sys
from datetime import date
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import CommandError, call_command

from django_segment_seq import next_text
from django_segment_seq.models import Sequence
from tests.conftest import ROOT, assert_unique, worker_env
from tests.seed_models import LEDGER_INVOICE, YEARLY_DOC, LedgerEntity

pytestmark = pytest.mark.django_db(transaction=True)


def segment_seq(*args: str) -> str:
    out = StringIO()
    call_command("segment_seq", *args, stdout=out)
    return out.getvalue()


def next_invoice(entity: LedgerEntity, year: int) -> str:
    return next_text(LEDGER_INVOICE, scope={"e": entity, "fy": year}, instance=SimpleNamespace(fiscal_year=year))


def test_set_creates_one_scopes_row_by_the_rules_spelling():
    """Before this, --scope was no option, and `set djl-invoice --min 6` moved the start of every entity and year."""
    a, b = LedgerEntity.objects.create(name="A"), LedgerEntity.objects.create(name="B")
    out = segment_seq("set", "djl-invoice", "--scope", f"e={a.pk}", "--scope", "fy=2024", "--min", "6")
    name = f"djl-invoice@e={a.pk},fy=2024"
    assert f"{name}: created in database 'default' from 'djl-invoice'" in out and "its next number is 6" in out
    row = Sequence.objects.get(name=name)
    assert (row.base_name, row.period, row.min_value, row.max_value) == ("djl-invoice", None, 6, 9999999999)
    assert next_invoice(a, 2024) == "I-2024-0000000006"
    assert next_invoice(a, 2025) == "I-2025-0000000001"  # other years and entities keep their own start
    assert next_invoice(b, 2024) == "I-2024-0000000001"
    again = segment_seq("set", "djl-invoice", "--scope", "fy=2024", "--scope", f"e={a.pk}", "--min", "40")
    assert f"{name}: min_value 6 -> 40" in again
    assert next_invoice(a, 2024) == "I-2024-0000000040"  # gapless: read from the row at every number


def test_set_creates_a_row_named_as_it_is_listed():
    """Before this: "No sequence row named …; a period or scope row is created from its sequence's row on first use"."""
    a = LedgerEntity.objects.create(name="A")
    segment_seq("set", "djl-invoice", "--step", "7")
    out = segment_seq("set", f"djl-invoice@e={a.pk},fy=2025", "--min", "3")
    assert "created" in out and "step 7, min_value 3" in out
    assert next_invoice(a, 2025) == "I-2025-0000000003"


def test_set_creates_a_periods_row(clock):
    out = segment_seq("set", "yearly-doc", "--period", "2026", "--min", "51")
    assert "yearly-doc@2026: created" in out and "max_value 999999" in out  # the format's width caps it
    assert next_text(YEARLY_DOC) == "2026-000051"
    assert next_text(YEARLY_DOC, at=date(2025, 1, 1)) == "2025-000001"
    row = Sequence.objects.get(name="yearly-doc@2026")
    assert (row.base_name, row.period) == ("yearly-doc", "2026")


@pytest.mark.parametrize(
    "args, message",
    [
        (["djl-invoice", "--scope", "e=1", "--scope", "fy=2024", "--period", "2024"], "has no reset"),
        (["djl-invoice", "--scope", "e=1"], r"the scope values given \(e\) are not the rule's scope \(e, fy\)"),
        (["djl-invoice", "--scope", "e=1", "--scope", "e=2"], "--scope e is given twice"),
        (["yearly-doc", "--scope", "x=1", "--period", "2026"], "is not scoped"),
        (["yearly-doc", "--period", "2026@x"], "must not contain '@'"),
        (["unknown", "--scope", "a=1", "--scope", "b=2"], "no rule of it is known here"),
        (["djl-invoice@2026", "--period", "2026"], "a row's name already"),
        (["djl-invoice", "--rule", "tests.seed_models.YEARLY_DOC", "--scope", "e=1"], "numbers sequence 'yearly-doc'"),
    ],
)
def test_set_refuses_a_row_the_rule_does_not_have_and_creates_nothing(args, message):
    with pytest.raises(CommandError, match=message):
        segment_seq("set", *args, "--min", "5")
    assert not Sequence.objects.exists()


def test_a_scoped_periodic_rows_period_is_asked_for():
    with pytest.raises(CommandError, match="give its --period"):
        segment_seq("set", "site-order", "--scope", "site=3", "--min", "5")
    out = segment_seq("set", "site-order", "--scope", "site=3", "--period", "2026", "--min", "5")
    assert "site-order@site=3/2026: created" in out


@pytest.mark.processes
def test_a_process_holding_a_range_of_a_periods_row_goes_above_its_new_minimum(tmp_path):
    """As for the sequence's own row: what it holds first (all below the minimum), then numbers from the minimum."""
    segment_seq("set", "yearly-doc", "--step", "10")
    ready, go, out = tmp_path / "ready", tmp_path / "go", tmp_path / "numbers"
    env = worker_env(SEGMENT_SEQ_TEST_READY=str(ready), SEGMENT_SEQ_TEST_GO=str(go))
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.support.seed_workers", "hold-then-take", "40", str(out)],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(600):
            if ready.exists() or worker.poll() is not None:
                break
            subprocess.run(["sleep", "0.05"], check=True)
        assert ready.exists(), worker.stderr.read() if worker.poll() is not None else "the worker never started"
        held = Sequence.objects.get(name="yearly-doc@2026").value
        report = segment_seq("set", "yearly-doc", "--period", "2026", "--min", "5001")
        assert "yearly-doc@2026: min_value 1 -> 5001" in report and "at its next range fetch" in report
        go.write_text("go")
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    numbers = assert_unique(int(line) for line in out.read_text().split())
    below = [n for n in numbers if n <= held]
    assert below == list(range(1, len(below) + 1)) and len(below) < len(numbers)
    assert all(n >= 5001 for n in numbers[len(below) :])
