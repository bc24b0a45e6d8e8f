"""Seeding a sequence from a column no SequenceField fills (numbers stored before the app came, or made in code):
`segment_seq sync LABEL --sequence NAME`, `set NAME --min N` on a row not made yet, and what processes running
through the change hand out."""

import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_segment_seq import next_value, next_values
from django_segment_seq.models import Sequence
from django_segment_seq.sync import sync_sequence
from tests import seed_models  # noqa: F401 - its models' tables are made with testapp's
from tests.conftest import ROOT, assert_unique, worker_env
from tests.testapp.models import LegacyOrder

pytestmark = pytest.mark.django_db(transaction=True)


def segment_seq(*args: str) -> str:
    out = StringIO()
    call_command("segment_seq", *args, stdout=out)
    return out.getvalue()


def legacy_orders(texts=(), serials=()):
    LegacyOrder.objects.bulk_create([LegacyOrder(number=text) for text in texts])
    LegacyOrder.objects.bulk_create([LegacyOrder(serial=serial) for serial in serials])


def test_a_text_column_seeds_a_row_that_does_not_exist_yet():
    legacy_orders(texts=[str(n) for n in range(100001, 100501)])
    out = segment_seq("sync", "testapp.LegacyOrder.number", "--sequence", "order")
    assert "Sequence 'order' created at 100500, the highest value stored in testapp.LegacyOrder.number." in out
    assert "The row is new" in out
    row = Sequence.objects.get(name="order")
    assert (row.value, row.min_value, row.base_name) == (100500, 1, None)
    assert next_value("order") == 100501


def test_an_integer_column_seeds_the_row_and_never_moves_it_back():
    legacy_orders(serials=[7, 4000, 12])
    (result,) = sync_sequence(LegacyOrder, "serial", sequence="ticket").rows
    assert (result.row_name, result.highest, result.created, result.after) == ("ticket", 4000, True, 4000)
    next_values("ticket", 10)  # 4001..4010
    (again,) = sync_sequence(LegacyOrder, "serial", sequence="ticket").rows
    assert (again.before, again.after, again.moved) == (5000, 5000, False)  # this process took 4001..5000


@pytest.mark.parametrize(
    "option, texts, highest, unreadable",
    [
        (["--pattern", "ORD-(?P<value>[0-9]+)-X"], ["ORD-000120-X", "ORD-7-X", "ORD-x-X", "legacy"], 120, 2),
        (["--pattern", "#([0-9]+)"], ["#5", "#17", "17"], 17, 1),
        (["--rule", "tests.seed_models.CODE_ORDER"], ["2025-000900", "2026-000123", "2026-12", "100"], 900, 1),
        (["--format", "ORD{value:06d}"], ["ORD000900", "ORD000123", "2026-12", "100"], 900, 2),
        ([], [" 41 ", "+3", "0042", "A-9", "4.5"], 42, 2),
    ],
)
def test_texts_are_read_by_a_pattern_a_format_or_as_whole_numbers(option, texts, highest, unreadable):
    legacy_orders(texts=[*texts, ""])  # an empty text is no number, and not counted as unreadable
    name = "code-order-by-year" if "--rule" in option else "code-order"  # the rule names its sequence
    sequence = [] if "--rule" in option else ["--sequence", name]
    out = segment_seq("sync", "testapp.LegacyOrder.number", *sequence, *option)
    assert f"created at {highest}" in out
    row = Sequence.objects.get(name=name)
    assert row.value == highest
    assert row.max_value == (999999 if "--rule" in option else 2**63 - 1)  # a rule's width caps its row, as first use
    assert f"{unreadable} stored values do not match the number's shape" in out


def test_set_min_creates_the_row_that_does_not_exist_yet():
    out = segment_seq("set", "order", "--min", "100501", "--step", "20")
    assert "order: created in database 'default' with step 20, min_value 100501" in out
    assert "its first number is 100501" in out
    assert next_values("order", 3) == range(100501, 100504)


def test_set_refuses_what_it_cannot_create_and_creates_nothing():
    with pytest.raises(CommandError, match=r"not created: .*The maximum must be greater than the minimum"):
        segment_seq("set", "order", "--min", "50", "--max", "10")
    with pytest.raises(CommandError, match=r"order@2026.* not created: .*The maximum must be greater"):
        segment_seq("set", "order@2026", "--min", "50", "--max", "10")
    assert not Sequence.objects.exists()


def test_a_plain_column_without_a_sequence_is_refused_naming_the_label_once():
    with pytest.raises(CommandError) as refused:
        segment_seq("sync", "testapp.ImportedOrder.currency")
    message = str(refused.value)
    assert message.count("testapp.ImportedOrder.currency") == 1, message
    assert "not a SequenceField" in message and "--sequence NAME" in message


@pytest.mark.parametrize(
    "args, message",
    [
        (["testapp.LegacyOrder.number", "--sequence", "o", "--pattern", "(["], "is not a regular expression"),
        (["testapp.LegacyOrder.number", "--sequence", "o", "--pattern", "(a)([0-9]+)"], "has 2 groups"),
        (["testapp.LegacyOrder.number", "--sequence", "o", "--format", "{date:%c}-{value}"], "cannot be read back"),
        (["testapp.LegacyOrder.number", "--sequence", "o", "--pattern", "x", "--format", "y"], "not allowed with"),
        (["testapp.LegacyOrder.serial", "--sequence", "o", "--pattern", "([0-9]+)"], "holds integers"),
        (["testapp.LegacyOrder.placed_on", "--sequence", "o"], "DateField: seeding reads an integer or a text"),
        (["testapp.LegacyOrder.nothing", "--sequence", "o"], "has no field 'nothing'"),
        (["testapp.LegacyOrder.number", "--sequence", "o@2026"], "names a period or scope row"),
        (["testapp.LegacyOrder.number", "--sequence", ""], "sequence"),
        (["testapp.ImportedOrder.number", "--sequence", "o"], "is a SequenceField"),
    ],
)
def test_bad_seeding_input_is_a_command_error_that_changes_nothing(args, message):
    legacy_orders(texts=["5"], serials=[5])
    with pytest.raises(CommandError, match=message):
        segment_seq("sync", *args)
    assert not Sequence.objects.exists()


def test_a_highest_number_above_the_rows_maximum_is_refused():
    segment_seq("set", "order", "--max", "1000")
    legacy_orders(texts=["1001"])
    with pytest.raises(CommandError, match="above the row's maximum 1000"):
        segment_seq("sync", "testapp.LegacyOrder.number", "--sequence", "order")
    assert Sequence.objects.get(name="order").value == 0


def test_stored_numbers_inside_the_handed_out_span_are_warned_about():
    next_value("order")  # the row now stands at 1000: processes may hold any of 1..1000
    legacy_orders(texts=["600", "1200"])
    out = segment_seq("sync", "testapp.LegacyOrder.number", "--sequence", "order")
    assert "moved from 1000 to 1200" in out
    assert "1 stored values lie at or below 1000" in out and "restart every process" in out


@pytest.mark.processes
@pytest.mark.parametrize("prefetch", ["", "1"], ids=["plain", "prefetch-adaptive"])
def test_a_process_holding_a_range_finishes_it_then_counts_above_the_seed(tmp_path, prefetch):
    """The rule: a running process hands out what it holds of the ranges it took before the seed (its range and a
    prefetched one, all at or below the row's value then), then numbers above the seed; so the seed repeats no
    stored number when every stored number lies above the row's value before it, which the command says."""
    segment_seq("set", "order", "--step", "10")
    ready, go, out = tmp_path / "ready", tmp_path / "go", tmp_path / "numbers"
    env = worker_env(SEGMENT_SEQ_TEST_READY=str(ready), SEGMENT_SEQ_TEST_GO=str(go), SEGMENT_SEQ_TEST_PREFETCH=prefetch)
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.support.workers", "hold-then-take", "order", "60", str(out)],
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
        before = Sequence.objects.get(name="order").value
        legacy_orders(texts=[str(n) for n in range(100001, 100501)])
        report = segment_seq("sync", "testapp.LegacyOrder.number", "--sequence", "order")
        assert f"moved from {before} to 100500" in report and "None of the stored values lies there" in report
        go.write_text("go")
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    numbers = assert_unique(int(line) for line in out.read_text().split())
    held = [n for n in numbers if n <= before]
    assert held == list(range(1, len(held) + 1))  # the ranges it held, in order, then nothing more below the seed
    assert all(n > 100500 for n in numbers[len(held) :])
    assert len(numbers) == 60 and len(held) < 60
    stored = {int(text) for text in LegacyOrder.objects.values_list("number", flat=True)}
    assert not stored & set(numbers)
