"""Prometheus export and log records: real allocations, then a scrape of the text Prometheus would read."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from django.conf import settings
from django.db.models import F
from django.test import override_settings
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.parser import text_string_to_metric_families

from django_segment_seq import (
    SequenceExhausted,
    clear_cache,
    next_value,
    next_values,
    sequence_stats,
    wait_for_prefetch,
)
from django_segment_seq.allocator import loop as allocator
from django_segment_seq.cache import events
from django_segment_seq.checks import check_settings
from django_segment_seq.models import Sequence
from django_segment_seq.observe import metrics
from django_segment_seq.observe.logs import log_fetch
from tests.conftest import ROOT, assert_unique, worker_env

ON_SQLITE = settings.BACKEND == "sqlite"
# Background fetches need the Sequence table in a SQLite file of its own (see tests/cache/test_prefetch.py).
ALIAS = "sequences" if ON_SQLITE else "default"
pytestmark = pytest.mark.django_db(transaction=True, databases=["default", ALIAS])

BASE = {"MAX_BACKOFF": 0.01, "PREFETCH": False, "ADAPTIVE_STEP": False}
METRICS_ON = {**BASE, "METRICS": True}
PREFETCH_ON = {**METRICS_ON, "PREFETCH": True, "PREFETCH_AT": 0.2}
if ON_SQLITE:
    PREFETCH_ON["DATABASE"] = ALIAS


def scrape(registry: CollectorRegistry = REGISTRY) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition text, by name and sorted labels."""
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict, name: str, sequence: str, alias: str = "default") -> float | None:
    return samples.get((name, (("alias", alias), ("sequence", sequence))))


def exported_counters(samples: dict, sequence: str, alias: str = "default") -> dict[str, float | None]:
    return {field: value(samples, f"segment_seq_{field}_total", sequence, alias) for field in metrics.COUNTERS}


def stats_counters(stats) -> dict[str, float]:
    return {field: float(getattr(stats, field)) for field in metrics.COUNTERS}


def warnings_with(caplog, attribute: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "django_segment_seq" and hasattr(r, attribute)]


# The export ----------------------------------------------------------------------------------------------------


@override_settings(SEGMENT_SEQ=METRICS_ON)
def test_counters_and_gauges_mirror_sequence_stats():
    Sequence.objects.create(name="mirror", step=10, max_value=1000)
    got = [next_value("mirror") for _ in range(25)] + list(next_values("mirror", 30))
    assert_unique(got, 55)
    stats = sequence_stats()[("default", "mirror")]
    assert stats.ranges_fetched == 4  # 1-10, 11-20, 21-30 and 31-60 for next_values
    samples = scrape()
    exported = exported_counters(samples, "mirror")
    # Numbers handed out are exported at each fetch: the 30 of next_values came after the latest one.
    assert exported.pop("handed_out") == 25
    assert exported == {k: v for k, v in stats_counters(stats).items() if k != "handed_out"}
    assert value(samples, "segment_seq_retries_total", "mirror") == 0  # the series exists before any retry
    assert value(samples, "segment_seq_row_step", "mirror") == 10
    assert value(samples, "segment_seq_range_size", "mirror") == 10
    assert value(samples, "segment_seq_numbers_left", "mirror") == 940
    assert value(samples, "segment_seq_used_ratio", "mirror") == pytest.approx(0.06)
    metrics.refresh()
    assert exported_counters(scrape(), "mirror") == stats_counters(stats)


@override_settings(SEGMENT_SEQ=METRICS_ON)
def test_counters_go_on_counting_after_the_cache_is_cleared():
    """sequence_stats() starts again from zero; a Prometheus counter never goes down."""
    Sequence.objects.create(name="again", step=10)
    [next_value("again") for _ in range(25)]
    clear_cache()
    [next_value("again") for _ in range(5)]
    assert sequence_stats()[("default", "again")].ranges_fetched == 1
    metrics.refresh()
    samples = scrape()
    assert value(samples, "segment_seq_ranges_fetched_total", "again") == 4
    # 20 counted at the fetches before the clear, 5 since; the 5 of the range the clear dropped were never
    # reported (clear_cache() is for tests and deleted rows; a process that exits reports them, see below).
    assert value(samples, "segment_seq_handed_out_total", "again") == 25


@pytest.fixture
def prefetch_alias():
    """On SQLite, the separate Sequence file (SequenceRouter); elsewhere nothing to do."""
    if not ON_SQLITE:
        yield
        return
    with override_settings(DATABASE_ROUTERS=["django_segment_seq.routers.SequenceRouter"]):
        yield


@override_settings(SEGMENT_SEQ=PREFETCH_ON)
def test_background_fetches_are_exported(prefetch_alias):
    Sequence.objects.create(name="ahead", step=20)
    got = []
    for _ in range(10):
        got.extend(next_value("ahead") for _ in range(20))
        wait_for_prefetch()
    assert_unique(got, 200)
    metrics.refresh()
    stats = sequence_stats()[(ALIAS, "ahead")]
    assert stats.background_fetches >= 9
    assert exported_counters(scrape(), "ahead", ALIAS) == stats_counters(stats)


def test_one_event_per_range_fetch_and_none_per_number():
    Sequence.objects.create(name="calls", step=100)
    seen = []
    events.subscribe(seen.append)
    try:
        got = [next_value("calls") for _ in range(1000)]
    finally:
        events.unsubscribe(seen.append)
    assert got == list(range(1, 1001))
    assert len(seen) == 10
    assert [event.allocation.block.first for event in seen] == list(range(1, 1000, 100))


def test_a_failing_listener_costs_no_number(caplog):
    Sequence.objects.create(name="robust", step=5)

    def broken(event):
        raise RuntimeError("listener bug")

    events.subscribe(broken)
    try:
        got = [next_value("robust") for _ in range(12)]
    finally:
        events.unsubscribe(broken)
    assert got == list(range(1, 13))
    failures = [r for r in caplog.records if r.levelno == logging.ERROR and "listener" in r.getMessage()]
    assert len(failures) == 3
    assert str(failures[0].exc_info[1]) == "listener bug"


def test_the_setting_subscribes_and_unsubscribes_the_export():
    assert events.listeners() == (log_fetch,)  # off by default: a fetch costs one listener, the logs
    with override_settings(SEGMENT_SEQ=METRICS_ON):
        assert metrics._exported is not None
        assert metrics._exported.record in events.listeners()
        Sequence.objects.create(name="toggled", step=10)
        next_value("toggled")
    next_values("toggled", 15)  # METRICS off again: not exported
    assert events.listeners() == (log_fetch,)
    assert value(scrape(), "segment_seq_ranges_fetched_total", "toggled") == 1


@pytest.mark.processes
def test_multiprocess_mode_adds_up_the_workers(tmp_path):
    """Two worker processes write their own files; MultiProcessCollector shows both processes' fetches."""
    Sequence.objects.using("default").create(name="mp", step=10, max_value=1000)
    directory = tmp_path / "prometheus"
    directory.mkdir()
    env = worker_env(PROMETHEUS_MULTIPROC_DIR=str(directory), SEGMENT_SEQ_TEST_SETTINGS=json.dumps({"METRICS": True}))
    outs = [tmp_path / f"worker{i}.json" for i in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.metrics_worker", "mp", "50", str(out)],
            cwd=ROOT,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for out in outs
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"worker failed:\n{err}"
    results = [json.loads(out.read_text()) for out in outs]
    assert_unique([n for result in results for n in result["numbers"]], 100)
    assert len(list(directory.glob("counter_*.db"))) == 2

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    samples = scrape(registry)
    totals = {field: float(sum(r["stats"]["default/mp"][field] for r in results)) for field in metrics.COUNTERS}
    assert exported_counters(samples, "mp") == totals
    assert totals["handed_out"] == 100  # each worker's last range counted at its exit
    assert totals["ranges_fetched"] == 10
    assert value(samples, "segment_seq_row_step", "mp") == 10
    assert value(samples, "segment_seq_range_size", "mp") == 10
    # The latest reading of the row: the last fetch of one worker, each of whose 5 ranges ends at 50 or above.
    left = value(samples, "segment_seq_numbers_left", "mp")
    assert left in {900.0, 910.0, 920.0, 930.0, 940.0, 950.0}
    assert value(samples, "segment_seq_used_ratio", "mp") == pytest.approx((1000 - left) / 1000)

    # gunicorn's child_exit hook: a dead worker's range size goes, its counts stay.
    for result in results:
        mark_process_dead(result["pid"], str(directory))
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    after = scrape(registry)
    assert value(after, "segment_seq_range_size", "mp") is None
    assert exported_counters(after, "mp") == totals


# Log records ---------------------------------------------------------------------------------------------------


@pytest.mark.skipif(
    ON_SQLITE,
    reason="on SQLite an allocation holds the write lock from its read to its compare-and-set: no rival fits between",
)
@pytest.mark.parametrize("rival_moves, logged", [(2, False), (3, True)])
def test_a_fetch_that_lost_many_compare_and_sets_is_logged(monkeypatch, caplog, rival_moves, logged):
    """A rival moves the row between our read and our compare-and-set, `rival_moves` times."""
    Sequence.objects.create(name="hot", step=5)
    moves = iter(range(rival_moves))
    read_row = allocator.read_row

    def read_then_lose(cursor, select_row: str, name: str):
        row = read_row(cursor, select_row, name)
        if next(moves, None) is not None:
            Sequence.objects.filter(name=name).update(value=F("value") + 1)
        return row

    monkeypatch.setattr(allocator, "read_row", read_then_lose)
    with override_settings(SEGMENT_SEQ={**BASE, "LOG_RETRIES_AT": 3}), caplog.at_level(logging.WARNING):
        assert next_value("hot") == rival_moves + 1
    assert sequence_stats()[("default", "hot")].retries == rival_moves
    records = warnings_with(caplog, "retries")
    assert len(records) == int(logged)
    if logged:
        assert (records[0].sequence, records[0].database, records[0].retries) == ("hot", "default", 3)
        assert "lost 3 compare-and-sets" in records[0].getMessage()


@override_settings(SEGMENT_SEQ={**PREFETCH_ON, "METRICS": False, "LOG_USED_SHARE_AT": None})
def test_a_failed_background_fetch_is_logged(prefetch_alias, caplog):
    """The prefetch after the last range of a sequence finds it exhausted."""
    Sequence.objects.create(name="short", step=5, max_value=10)
    with caplog.at_level(logging.WARNING, logger="django_segment_seq"):
        got = [next_value("short") for _ in range(5)]
        wait_for_prefetch()
        assert not [r for r in caplog.records if r.exc_info]  # the prefetch of 6-10 went well
        got += [next_value("short") for _ in range(5)]
        wait_for_prefetch()
    assert got == list(range(1, 11))
    failures = [r for r in caplog.records if r.name == "django_segment_seq" and r.exc_info]
    assert len(failures) == 1
    assert isinstance(failures[0].exc_info[1], SequenceExhausted)
    assert (failures[0].sequence, failures[0].database) == ("short", ALIAS)
    assert "Background fetch" in failures[0].getMessage()
    assert sequence_stats()[(ALIAS, "short")].background_failures == 1
    with pytest.raises(SequenceExhausted):
        next_value("short")


@override_settings(SEGMENT_SEQ={**BASE, "LOG_USED_SHARE_AT": 0.8})
def test_passing_a_share_of_the_maximum_is_logged_once_per_crossing(caplog):
    Sequence.objects.create(name="tickets", step=10, max_value=100)
    with caplog.at_level(logging.WARNING, logger="django_segment_seq"):
        [next_value("tickets") for _ in range(70)]
        assert warnings_with(caplog, "used_share") == []
        next_value("tickets")  # 71: the range 71-80 reaches 80%
        assert len(warnings_with(caplog, "used_share")) == 1
        assert next_value("tickets") == 72
        [next_value("tickets") for _ in range(28)]  # two more ranges, to 100: no more records
        assert len(warnings_with(caplog, "used_share")) == 1
        row = Sequence.objects.get(name="tickets")
        row.max_value = 1000  # what the first record asks someone to do
        row.save()
        assert next_value("tickets") == 101  # 11%: below again
        assert len(warnings_with(caplog, "used_share")) == 1
        assert next_values("tickets", 690)[-1] == 800  # 80% of the new maximum: a new crossing
    records = warnings_with(caplog, "used_share")
    assert [r.used_share for r in records] == [0.8, 0.8]
    assert records[0].getMessage() == (
        "Sequence 'tickets' on database 'default' has handed out 80.0% of its numbers: up to 80, its max_value is 100."
    )


@override_settings(SEGMENT_SEQ={**BASE, "LOG_USED_SHARE_AT": 0.5})
def test_a_cycling_sequence_is_not_logged_for_reaching_its_maximum(caplog):
    Sequence.objects.create(name="loop", step=10, max_value=40, cycle=True)
    with caplog.at_level(logging.WARNING, logger="django_segment_seq"):
        got = [next_value("loop") for _ in range(60)]
    assert got == list(range(1, 41)) + list(range(1, 21))
    assert warnings_with(caplog, "used_share") == []


# Checks --------------------------------------------------------------------------------------------------------


def check_ids(value: dict) -> list[str]:
    with override_settings(SEGMENT_SEQ=value):
        return [e.id for e in check_settings()]


@pytest.mark.parametrize(
    "value",
    [
        {"METRICS": True, "LOG_RETRIES_AT": None, "LOG_USED_SHARE_AT": None},
        {"LOG_RETRIES_AT": 1, "LOG_USED_SHARE_AT": 1},
        {"LOG_USED_SHARE_AT": 0.95},
    ],
)
def test_good_metrics_and_log_settings_pass(value):
    assert check_ids(value) == []


@pytest.mark.parametrize(
    "value",
    [
        {"METRICS": "yes"},
        {"METRICS": 1},
        {"LOG_RETRIES_AT": 0},
        {"LOG_RETRIES_AT": 2.5},
        {"LOG_RETRIES_AT": True},
        {"LOG_USED_SHARE_AT": 0},
        {"LOG_USED_SHARE_AT": 1.5},
        {"LOG_USED_SHARE_AT": "80%"},
    ],
)
def test_bad_metrics_and_log_settings_are_reported(value):
    assert check_ids(value) == ["django_segment_seq.E003"]


def test_metrics_without_prometheus_client_is_reported(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # what find_spec reports for a missing package
    assert check_ids({"METRICS": True}) == ["django_segment_seq.E006"]
    assert check_ids({"METRICS": False}) == []


def test_a_multiprocess_directory_that_does_not_exist_is_reported(monkeypatch, tmp_path):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "missing"))
    assert check_ids({"METRICS": True}) == ["django_segment_seq.E007"]
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    assert check_ids({"METRICS": True}) == []
