"""manage.py segment_seq: list, show, set, sync and backfill, their JSON, and errors that change nothing."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from tests.testapp.models import DailyOrder, ImportedOrder

pytestmark = pytest.mark.django_db(transaction=True)


def segment_seq(*args: str) -> str:
    out = StringIO()
    call_command("segment_seq", *args, stdout=out)
    return out.getvalue()


def test_list_without_sequences():
    assert "No sequences yet" in segment_seq("list")


def test_list_groups_periods_under_their_sequence(clock):
    next_value("order")
    DailyOrder.objects.create()
    clock.advance(days=1)
    DailyOrder.objects.create()
    Sequence.objects.create(name="ticket", step=10, max_value=500)
    lines = segment_seq("list").splitlines()
    assert lines[0].split() == ["NAME", "VALUE", "STEP", "MIN", "MAX", "CYCLE", "LEFT"]
    names = [line.split()[0] for line in lines[1:]]
    assert names == ["daily-order", "daily-order@2026-11-23", "daily-order@2026-11-22", "order", "ticket"]
    assert lines[2].startswith("  daily-order@2026-11-23")
    assert lines[4].split() == ["order", "1000", "1000", "1", "no", "limit", "no", "no", "limit"]
    assert lines[5].split() == ["ticket", "0", "10", "1", "500", "no", "500"]


def test_list_json(clock):
    DailyOrder.objects.create()
    data = json.loads(segment_seq("list", "--json"))
    (entry,) = data["sequences"]
    assert (entry["name"], entry["left"], entry["max_value"]) == ("daily-order", None, 2**63 - 1)
    (period,) = entry["periods"]
    assert (period["name"], period["period"], period["value"], period["left"]) == (
        "daily-order@2026-11-22",
        "2026-11-22",
        1000,
        999_999 - 1000,
    )


def test_show_lists_the_row_its_periods_and_this_process(clock):
    DailyOrder.objects.create()
    text = segment_seq("show", "daily-order")
    assert "Sequence daily-order" in text and "no limit" in text
    assert "Periods, newest first:" in text and "daily-order@2026-11-22" in text
    assert "This process, daily-order@2026-11-22: handed_out 1" in text
    data = json.loads(segment_seq("show", "daily-order", "--json"))
    assert data["this_process"]["daily-order@2026-11-22"]["handed_out"] == 1
    assert data["periods"][0]["base_name"] == "daily-order"


def test_show_of_an_unused_sequence_says_so():
    Sequence.objects.create(name="spare")
    assert "This process: no numbers taken from it." in segment_seq("show", "spare")


def test_set_saves_through_the_model():
    next_value("order")
    out = segment_seq("set", "order", "--step", "50", "--max", "90000", "--cycle")
    assert "order: step 1000 -> 50" in out and "order: cycle False -> True" in out
    row = Sequence.objects.get(name="order")
    assert (row.step, row.max_value, row.cycle, row.value) == (50, 90000, True, 1000)
    segment_seq("set", "order", "--no-cycle")
    assert not Sequence.objects.get(name="order").cycle


@pytest.mark.parametrize(
    "args, message",
    [
        (["--step", "0"], "step: The step must be at least 1."),
        (
            ["--max", "999"],
            "max_value: The maximum must not be below the value: numbers up to 1000 were already handed out.",
        ),
        (["--min", "5000", "--max", "10"], "The maximum must be greater than the minimum."),
        ([], "Nothing to change"),
    ],
)
def test_set_refuses_what_the_admin_refuses_and_changes_nothing(args, message):
    next_value("order")
    before = Sequence.objects.values().get(name="order")
    with pytest.raises(CommandError, match=message.replace(".", r"\.")):
        segment_seq("set", "order", *args)
    assert Sequence.objects.values().get(name="order") == before


def test_unknown_sequence_is_an_error():
    with pytest.raises(CommandError, match="No sequence named 'nosuch'"):
        segment_seq("show", "nosuch")  # `set` creates it instead: tests/test_seed.py


def test_sync_moves_the_sequence_and_says_so():
    ImportedOrder.objects.create(number=4321)
    out = segment_seq("sync", "testapp.ImportedOrder.number")
    assert "Sequence 'imported-order' moved from 0 to 4321" in out
    assert "already at 4321" in segment_seq("sync", "testapp.ImportedOrder.number")


@pytest.mark.parametrize(
    "label, message",
    [
        ("testapp.ImportedOrder", "give the field as APP_LABEL.Model.field"),
        ("testapp.Nothing.number", "doesn't have a 'Nothing' model"),
        ("testapp.ImportedOrder.currency", "not a SequenceField"),
        ("testapp.ImportedOrder.ref", "callable"),
    ],
)
def test_sync_errors(label, message):
    ImportedOrder.objects.create(number=7, code="-", ref="PAY/26/EUR/1")
    with pytest.raises(CommandError, match=message):
        segment_seq("sync", label)
    assert not Sequence.objects.exists()


def test_backfill_shows_progress_and_resumes():
    ImportedOrder.objects.bulk_create([ImportedOrder(number=0, code="-", ref="-") for _ in range(12)])
    ImportedOrder.objects.update(number=None)
    out = segment_seq("backfill", "testapp.ImportedOrder.number", "--batch-size", "5")
    assert "12/12" in out and "100%" in out
    assert "testapp.ImportedOrder.number: filled 12 rows in 3 batches." in out
    assert "nothing to fill" in segment_seq("backfill", "testapp.ImportedOrder.number")
    assert sorted(ImportedOrder.objects.values_list("number", flat=True)) == list(range(1, 13))


@pytest.mark.parametrize(
    "args, message",
    [
        (["testapp.Invoice.id"], "primary key"),
        (["testapp.ImportedOrder.number", "--batch-size", "0"], "--batch-size must be at least 1"),
    ],
)
def test_backfill_errors(args, message):
    with pytest.raises(CommandError, match=message):
        segment_seq("backfill", *args)


def test_show_gives_the_server_history_of_the_last_range(backend):
    next_value("order")
    history = Sequence.objects.get(name="order").history
    assert ("server history" in segment_seq("show", "order")) and (history or "(none recorded)") in segment_seq(
        "show", "order"
    )
    assert json.loads(segment_seq("show", "order", "--json"))["history"] == history
