"""A caller that runs out while a background fetch runs: a slow fetch is waited for or joined, never refused; a fetch
that finds the row held elsewhere refuses its waiters within LOCK_TIMEOUT and a fraction of a second."""

import re
import threading
import time
from types import SimpleNamespace

import pytest
from django.db import connections, transaction
from django.test import override_settings

from django_segment_seq import next_value, sequence_stats, wait_for_prefetch
from django_segment_seq.allocator.attempts import RowBusy
from django_segment_seq.allocator.blocks import Row
from django_segment_seq.allocator.retry import Plan
from django_segment_seq.cache import range_cache as cache
from django_segment_seq.conf import app_settings
from django_segment_seq.exceptions import SequenceUnavailable
from django_segment_seq.models import Sequence
from tests.cache.conftest import ALIAS, ON_SQLITE
from tests.conftest import assert_unique

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", ALIAS]),
    pytest.mark.usefixtures("sequence_file"),
]

LOCK_TIMEOUT = 0.3
PREFETCH_ON = {
    "PREFETCH": True,
    "PREFETCH_AT": 0.2,
    "ADAPTIVE_STEP": False,
    "MAX_BACKOFF": 0.05,
    "LOCK_TIMEOUT": LOCK_TIMEOUT,
    **({"DATABASE": ALIAS} if ON_SQLITE else {}),
}


@pytest.mark.parametrize("slowness", [1.5, 4.0], ids=["ends-soon-after-a-lock-wait", "far-slower"])
@override_settings(SEGMENT_SEQ=PREFETCH_ON)
def test_a_slow_background_fetch_is_not_taken_for_a_stuck_one(monkeypatch, slowness):
    """The background fetch takes `slowness` lock waits (a loaded machine, lost races) while nothing holds the row.

    The caller that runs out meanwhile gets its numbers: it waits for the fetch, or fetches itself once the fetch
    has outlasted a lock wait; before, it was refused with "a background fetch ... has not ended in 0.3 s".
    """
    Sequence.objects.using(ALIAS).create(name="slow", step=10)
    real = cache.ranges.source.allocate
    caller = threading.current_thread()

    def slow_in_background(request):
        if threading.current_thread() is not caller:
            time.sleep(slowness * LOCK_TIMEOUT)
        return real(request)

    monkeypatch.setattr(cache.ranges, "source", SimpleNamespace(allocate=slow_in_background))
    got = [next_value("slow") for _ in range(35)]  # three ranges used up, each while a fetch was on its way
    wait_for_prefetch(30)
    assert_unique(got, 35)
    figures = sequence_stats()[(ALIAS, "slow")]
    assert figures.waits_for_background >= 1  # the path under test ran: a caller found a fetch running


@pytest.mark.skipif(ON_SQLITE, reason="a row held by another transaction (SQLite locks the whole file)")
@override_settings(SEGMENT_SEQ={**PREFETCH_ON, "LOCK_TIMEOUT": 1.0, "PREFETCH_AT": 0.5})
def test_a_background_fetch_that_finds_the_row_held_refuses_its_waiters_once():
    """Another transaction holds the row while the prefetch runs: every caller that runs out hears the fetch's verdict.

    Eight threads run out at once; each is refused within LOCK_TIMEOUT and the grace for the fetch's last statement,
    however many wait, not after a fetch of its own (which would wait LOCK_TIMEOUT again).
    """
    Sequence.objects.create(name="held", step=100)
    got = [next_value("held")]  # the first range, fetched in the foreground
    locked, release = threading.Event(), threading.Event()

    def hold_the_row() -> None:
        try:
            with transaction.atomic():
                Sequence.objects.select_for_update().get(name="held")
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    outcomes: list[tuple[float, BaseException | int]] = []

    def run_out() -> None:
        arrived = time.monotonic()
        try:
            outcome: BaseException | int = next_value("held")
        except SequenceUnavailable as exc:
            outcome = exc
        finally:
            connections.close_all()
        outcomes.append((time.monotonic() - arrived, outcome))

    holder = threading.Thread(target=hold_the_row, daemon=True)
    holder.start()
    try:
        assert locked.wait(10)
        got.extend(next_value("held") for _ in range(99))  # the prefetch starts half-way and finds the row held
        callers = [threading.Thread(target=run_out, daemon=True) for _ in range(8)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(30)
    finally:
        release.set()
        holder.join(30)
    wait_for_prefetch(30)
    assert len(outcomes) == 8, "a caller still waited after 30 s"
    grace = app_settings()["MAX_BACKOFF"] + cache.VERDICT_MARGIN
    for waited, outcome in outcomes:
        assert isinstance(outcome, SequenceUnavailable), outcome
        assert "held by another transaction" in str(outcome)
        # A generous margin for a loaded machine, still well short of a second lock wait.
        assert waited < 1.0 + grace + 0.6, f"a caller was refused after {waited:.2f} s"
    got.extend(next_value("held") for _ in range(150))  # the row is free again
    assert_unique(got, 250)


def test_a_row_first_found_held_late_in_a_fetch_gets_its_whole_lock_wait():
    """A fetch that lost races for longer than LOCK_TIMEOUT, then finds the row held for a moment, goes on.

    The held row is waited for from the read that found it; before, the fetch was refused at once because its
    LOCK_TIMEOUT was counted from its first attempt.
    """
    plan = Plan.begin(None, {**app_settings(), "LOCK_TIMEOUT": 2.0, "MAX_BACKOFF": 0.001}, patient=True)
    plan.started -= 5.0  # the fetch began 5 s ago: races lost on a starved machine
    plan.deadline -= 5.0
    found = RowBusy("held for a moment", Row(100, 10, 1, 10**9, False, version=7), time.monotonic())
    plan.wait_for_holder(found, "default", "s")
    assert plan.progress.held_until == plan.deadline  # waiters see when its verdict is due
    moved = RowBusy("moved on", Row(110, 10, 1, 10**9, False, version=8), time.monotonic())
    plan.wait_for_holder(moved, "default", "s")
    assert plan.progress.held_until is None  # the row moves: contention, not a holder


@pytest.mark.skipif(ON_SQLITE, reason="SQLite has no row locks: its writer holds the whole file")
def test_a_row_found_held_after_lost_races_that_outlasted_lock_timeout_is_waited_for():
    """Lost races within one attempt take longer than LOCK_TIMEOUT (a loaded machine), then the row is held for a
    moment: the fetch waits for it and goes on. Before, the hold was counted from the start of the attempt, so the
    fetch was refused at once ("held by another transaction for over 1 s") though nothing held the row for long.
    """
    table = Sequence._meta.db_table
    Sequence.objects.create(name="raced", step=10)
    lost, held = [], threading.Event()

    def bump_version() -> None:
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                cursor.execute(f"UPDATE {table} SET version = version + 1 WHERE name = %s", ["raced"])
        finally:
            other.close()

    def hold_for_a_moment(locked: threading.Event) -> None:
        other = connections.create_connection("default")
        try:
            other.set_autocommit(False)
            with other.cursor() as cursor:
                cursor.execute(f"SELECT id FROM {table} WHERE name = %s FOR UPDATE", ["raced"])
                locked.set()
                time.sleep(0.4)
            other.rollback()
        finally:
            other.close()

    def races_then_a_hold(execute, sql, params, many, context):
        if re.search(rf"UPDATE [`\"]?{table}", sql) and len(lost) < 5:  # the compare-and-set
            lost.append(sql)
            bump_version()  # another process moved the row first: this compare-and-set misses
            time.sleep(0.3)  # a starved CPU: five lost races take 1.5 s, past LOCK_TIMEOUT
        elif "SKIP LOCKED" in sql and len(lost) == 5 and not held.is_set():
            held.set()
            locked = threading.Event()
            threading.Thread(target=hold_for_a_moment, args=(locked,), daemon=True).start()
            assert locked.wait(10)
        return execute(sql, params, many, context)

    settings = {"ADAPTIVE_STEP": False, "MAX_BACKOFF": 0.01, "LOCK_TIMEOUT": 1.0}
    with override_settings(SEGMENT_SEQ=settings), connections["default"].execute_wrapper(races_then_a_hold):
        started = time.monotonic()
        first = next_value("raced")
    assert len(lost) == 5 and held.is_set(), "the scenario did not happen: lost races, then a hold"
    assert first == 1
    assert time.monotonic() - started < 1.5 + 1.0 + 1.0, "waited past the hold's own lock wait"
