"""The failover fence: a row last written on another server history skips FAILOVER_SKIP numbers before its next
block, so numbers an old primary handed out and a lagging standby never received are not handed out again."""

import pytest
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext

from django_segment_seq import clear_cache, next_value
from django_segment_seq.allocator.blocks import Row, failover_skip, next_block
from django_segment_seq.allocator.rows import ensure_derived_row
from django_segment_seq.conf import app_settings
from django_segment_seq.db.history import history_of, server_history
from django_segment_seq.flow.derived import take
from django_segment_seq.models import Sequence

SKIP = 1_000


def test_no_skip_on_the_same_history_or_before_any_was_recorded():
    row = Row(100, 10, 1, 10**9, False, 3, "pg:1:1")
    assert failover_skip(row, "pg:1:1", SKIP) == 0
    assert failover_skip(row._replace(history=""), "pg:1:2", SKIP) == 0  # written before the fence existed
    assert failover_skip(row, "", SKIP) == 0  # SQLite: no failover


def test_another_history_skips_and_a_short_row_skips_half_of_what_it_has_left():
    row = Row(100, 10, 1, 10**9, False, 3, "pg:1:1")
    assert failover_skip(row, "pg:1:2", SKIP) == SKIP
    assert next_block("s", row, skip=SKIP) == (100 + SKIP + 1, 100 + SKIP + 10)
    capped = row._replace(max_value=999)  # 899 numbers left: half of them is skipped, the rest stay usable
    assert failover_skip(capped, "pg:1:2", SKIP) == 449
    assert next_block("s", capped, skip=449).first == 550


@pytest.mark.parametrize(
    ("vendor", "answer", "history"),
    [
        ("postgresql", ("7440219912938211391", "000000030000000000000007"), "pg:7440219912938211391:3"),
        ("mariadb", (1, None), "mariadb:1"),
        ("mariadb", (2, ""), "mariadb:2"),
        ("mariadb", (1, "00000000-0000-0000-0000-000000000000"), "mariadb:1"),
        ("mariadb", (1, "5b8c1f0e-1d2a-11ef-9a3b-7e2f1c0d9a11"), "galera:5b8c1f0e-1d2a-11ef-9a3b-7e2f1c0d9a11"),
        ("mysql", ("3e11fa47-71ca-11e1-9e33-c80aa9429562", None), "mysql:3e11fa47-71ca-11e1-9e33-c80aa9429562"),
    ],
)
def test_history_texts(vendor, answer, history):
    assert history_of(vendor, answer) == history


@pytest.mark.django_db(transaction=True)
def test_every_range_records_the_history_it_was_taken_on(backend):
    next_value("fenced")
    history = Sequence.objects.get(name="fenced").history
    # The server's history, then the Sequence table's identity (its oid, its InnoDB table id): see test_restores.
    server, _, table = history.partition("/")
    assert server == server_history(connections["default"])
    expected = {"sqlite": "", "postgres": "pg:", "mariadb": "mariadb:"}[backend]
    assert history.startswith(expected) and (backend == "sqlite") == (history == "")
    assert (backend == "sqlite") == (table == "") and (table == "" or table.isdigit())


@pytest.mark.django_db(transaction=True)
def test_a_row_carries_the_history_it_was_made_on_before_its_first_range(backend):
    """A row made before a standby fell behind and first used in what the standby never received must still show
    another history after the promotion: an empty one skips nothing (before, 10,500 numbers came twice)."""
    Sequence.objects.create(name="made")  # the admin, a project's code
    Sequence.objects.bulk_create([Sequence(name="bulk")])
    ensure_derived_row("default", "made:2026", base_name="made", period="2026")  # a new period's row
    history = server_history(connections["default"])
    assert (history == "") == (backend == "sqlite")
    assert {row.name: row.history for row in Sequence.objects.all()} == dict.fromkeys(
        ["bulk", "made", "made:2026"], history
    )
    assert {row.version for row in Sequence.objects.all()} == {0}  # made, no range taken yet
    Sequence.objects.filter(name="made").update(history="pg:another-server:1")  # as the promoted standby sees it
    clear_cache()
    expected = 1 if backend == "sqlite" else app_settings()["FAILOVER_SKIP"] + 1
    assert next_value("made") == expected


@pytest.mark.django_db(transaction=True)
def test_a_row_written_on_another_history_skips_before_its_next_range(backend, caplog):
    if backend == "sqlite":
        pytest.skip("SQLite has one file and no failover: its rows record no history")
    Sequence.objects.create(name="fenced", step=10)
    assert next_value("fenced") == 1
    Sequence.objects.filter(name="fenced").update(history="pg:another-server:1", value=10)
    clear_cache()
    skip = app_settings()["FAILOVER_SKIP"]
    assert next_value("fenced") == 10 + skip + 1
    assert f"skipped numbers 11 to {10 + skip} (FAILOVER_SKIP)" in caplog.text  # the gap is explained in the log
    row = Sequence.objects.get(name="fenced")
    assert row.value == 10 + skip + 10 and row.history.startswith(server_history(connections["default"]) + "/")
    clear_cache()
    assert next_value("fenced") == 10 + skip + 11  # the history is this server's again: no second skip


@pytest.mark.django_db(transaction=True)
def test_a_skip_of_zero_turns_the_fence_off(backend, settings):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "FAILOVER_SKIP": 0}
    Sequence.objects.create(name="unfenced", step=10)
    next_value("unfenced")
    Sequence.objects.filter(name="unfenced").update(history="pg:another-server:1")
    clear_cache()
    assert next_value("unfenced") == 11


@pytest.mark.django_db(transaction=True)
def test_gapless_numbers_never_skip(backend):
    Sequence.objects.create(name="gapless-fenced")
    with transaction.atomic():
        assert take("gapless-fenced", int, gapless=True) == 1
    Sequence.objects.filter(name="gapless-fenced").update(history="pg:another-server:1")
    with transaction.atomic():
        assert take("gapless-fenced", int, gapless=True) == 2
    # The other history stays recorded, so a range taken on its own later still skips.
    assert Sequence.objects.get(name="gapless-fenced").history == "pg:another-server:1"
    skip = 0 if backend == "sqlite" else app_settings()["FAILOVER_SKIP"]  # SQLite: no history, no failover
    assert next_value("gapless-fenced") == 2 + skip + 1


@pytest.mark.django_db(transaction=True)
def test_the_history_is_asked_again_on_every_new_session(backend):
    """A session opened after a failover must not answer with the history cached from the one before it."""
    if backend == "sqlite":
        pytest.skip("SQLite has no server history")
    caller = connections["default"]
    server_history(caller)
    with CaptureQueriesContext(caller) as same_session:
        server_history(caller)
    assert len(same_session) == 0  # asked once per session
    for _ in range(3):  # a new DB-API connection may reuse the address of the one closed just before
        caller.close()
        caller.ensure_connection()
        with CaptureQueriesContext(caller) as new_session:
            server_history(caller)
        assert len(new_session) == 1
