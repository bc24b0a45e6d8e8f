"""Prefetch: the next range arrives in the background, failures are recovered in the foreground, fork leaks nothing."""

import os
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest
from django.db import OperationalError
from django.test import override_settings

from django_segment_seq import next_value, next_values, sequence_stats, wait_for_prefetch
from django_segment_seq.cache import range_cache as cache
from django_segment_seq.exceptions import SequenceUnavailable
from django_segment_seq.models import Sequence
from tests.cache.conftest import ALIAS, ON_SQLITE
from tests.conftest import ROOT, assert_unique, worker_env

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=["default", ALIAS]),
    pytest.mark.usefixtures("sequence_file"),
]

PREFETCH_ON = {"PREFETCH": True, "PREFETCH_AT": 0.2, "ADAPTIVE_STEP": False, "MAX_BACKOFF": 0.01}
if ON_SQLITE:
    PREFETCH_ON["DATABASE"] = ALIAS


def stats(name: str):
    return sequence_stats()[(ALIAS, name)]


@override_settings(SEGMENT_SEQ=PREFETCH_ON)
def test_next_ranges_come_from_the_background():
    """Given time to finish, background fetches serve every range after the first: no caller waits."""
    Sequence.objects.create(name="s", step=100)
    got = []
    for _ in range(100):
        got.extend(next_value("s") for _ in range(10))
        wait_for_prefetch()
    assert got == list(range(1, 1001))
    figures = stats("s")
    assert figures.foreground_fetches == 1  # the very first range
    assert figures.blocking_fetches == 1
    assert figures.background_fetches >= 9
    assert figures.handed_out == 1000


@override_settings(SEGMENT_SEQ=PREFETCH_ON)
def test_failed_background_fetch_is_recovered_in_the_foreground(monkeypatch):
    Sequence.objects.create(name="s", step=50)
    assert next_value("s") == 1
    real = cache.ranges.source.allocate

    def fails_in_background(request):
        if request.create is False:
            raise SequenceUnavailable("s", ALIAS, 1, OperationalError("gone"))
        return real(request)

    monkeypatch.setattr(cache.ranges, "source", SimpleNamespace(allocate=fails_in_background))
    got = [1] + [next_value("s") for _ in range(120)]
    wait_for_prefetch()
    figures = stats("s")
    assert figures.background_failures >= 1
    assert figures.foreground_fetches >= 2  # the range after the failure was fetched by a caller
    assert_unique(got, 121)
    assert got == sorted(got)
    monkeypatch.setattr(cache.ranges, "source", SimpleNamespace(allocate=real))
    more = [next_value("s") for _ in range(200)]
    wait_for_prefetch()
    assert stats("s").background_fetches >= 1  # prefetch works again: it never stays stuck
    assert_unique(got + more)


@override_settings(SEGMENT_SEQ=PREFETCH_ON)
def test_background_error_surfaces_in_the_caller_that_runs_out(monkeypatch):
    Sequence.objects.create(name="s", step=20)
    next_value("s")

    def always_fails(*args, **kwargs):
        raise SequenceUnavailable("s", ALIAS, 5, OperationalError("down"))

    monkeypatch.setattr(cache.ranges, "source", SimpleNamespace(allocate=always_fails))
    with pytest.raises(SequenceUnavailable, match="down"):
        for _ in range(25):
            next_value("s")
    wait_for_prefetch()
    assert stats("s").background_failures == 1
    assert stats("s").handed_out == 20


@override_settings(SEGMENT_SEQ=PREFETCH_ON)
def test_every_sequence_gets_its_background_fetch_and_no_thread_stays():
    """Each fetch runs on a thread of its own (a locked row cannot hold up the others) that ends with it."""
    names = [f"many-{i}" for i in range(15)]
    for name in names:
        Sequence.objects.create(name=name, step=10)
    for _ in range(3):
        for name in names:
            next_values(name, 5)
    assert wait_for_prefetch(timeout=30)
    assert not [t for t in threading.enumerate() if t.name == "segment-seq-prefetch"]
    assert sum(stats(name).background_fetches for name in names) >= len(names)


@pytest.mark.skipif(not ON_SQLITE, reason="SQLite's single writer")
@override_settings(SEGMENT_SEQ={**PREFETCH_ON, "DATABASE": None}, DATABASE_ROUTERS=[])
def test_no_background_fetch_on_a_shared_sqlite_file():
    """A background commit would make the caller's read-then-write transactions fail on a shared file."""
    Sequence.objects.create(name="s", step=10)
    got = [next_value("s") for _ in range(100)]
    assert wait_for_prefetch(timeout=30)
    figures = sequence_stats()[("default", "s")]
    assert figures.background_fetches == 0
    assert figures.foreground_fetches == 10
    assert got == list(range(1, 101))


@pytest.mark.processes
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@pytest.mark.parametrize("in_flight", [True, False])
@override_settings(SEGMENT_SEQ=PREFETCH_ON)
def test_fork_during_prefetch_hands_out_no_duplicates(monkeypatch, tmp_path, in_flight):
    """Children forked while a prefetch is running (or done and unused) never see the parent's blocks."""
    Sequence.objects.create(name="f", step=100)
    real = cache.ranges.source.allocate
    started = threading.Event()

    def slow_background(request):
        if request.create is False and in_flight:
            started.set()
            time.sleep(0.5)  # the block is taken after the fork, while children run
        return real(request)

    monkeypatch.setattr(cache.ranges, "source", SimpleNamespace(allocate=slow_background))
    parent = [next_value("f") for _ in range(30)]  # past the prefetch point
    if in_flight:
        assert started.wait(10)
    else:
        wait_for_prefetch()
        assert cache.ranges._slots[(ALIAS, "f")].pending is not None
    children = []
    for i in range(3):
        pid = os.fork()
        if pid == 0:  # child: take numbers, write them, leave without running the parent's cleanup
            code = 1
            try:
                numbers = [next_value("f") for _ in range(250)]
                (tmp_path / f"child{i}.txt").write_text("\n".join(map(str, numbers)))
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    parent += [next_value("f") for _ in range(250)]
    for pid in children:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    got = list(parent)
    for i in range(3):
        got += [int(n) for n in (tmp_path / f"child{i}.txt").read_text().split()]
    assert_unique(got, 280 + 3 * 250)


@pytest.mark.parametrize("mode", ["value", "mixed", "bulk"])
def test_processes_with_prefetch_and_adaptive_step_get_distinct_numbers(run_workers, mode):
    Sequence.objects.create(name="p", step=50)
    Sequence.objects.create(name="bulk-id", step=50)
    results = run_workers([(mode, "p", 3000)] * 4, SEGMENT_SEQ_TEST_PREFETCH="1")
    assert_unique(n for part in results for n in part)


@pytest.mark.processes
@pytest.mark.skipif(ON_SQLITE, reason="no background fetch on the workers' shared SQLite file")
def test_exit_with_a_prefetch_in_flight_is_clean(transactional_db):
    """The prefetch thread never holds up interpreter exit, even in the middle of a fetch."""
    Sequence.objects.create(name="x", step=10)
    script = (
        "import django, time, types; django.setup()\n"
        "from django_segment_seq import next_value\n"
        "from django_segment_seq.cache import range_cache as cache\n"
        "real = cache.ranges.source.allocate\n"
        "def slow(request):\n"
        "    if request.create is False: time.sleep(30)\n"
        "    return real(request)\n"
        "cache.ranges.source = types.SimpleNamespace(allocate=slow)\n"
        "print(sum(next_value('x') for _ in range(5)))\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=worker_env(SEGMENT_SEQ_TEST_PREFETCH="1"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "15"
    assert time.monotonic() - started < 25


def test_worker_shutdown_refuses_new_jobs_and_does_not_hang():
    from django_segment_seq.cache.prefetch import Prefetcher

    worker = Prefetcher()
    release = threading.Event()
    done = []
    assert worker.submit(lambda: release.wait(10))
    assert worker.submit(lambda: done.append(1))
    started = time.monotonic()
    worker.shutdown(timeout=0.2)
    assert time.monotonic() - started < 5
    assert not worker.submit(lambda: done.append(2))  # refused: callers fetch in the foreground
    release.set()
    assert worker.drain(timeout=10)
    assert done == [1]  # queued work is finished, never dropped with its slot marked as fetching


@override_settings(SEGMENT_SEQ=PREFETCH_ON)
def test_a_caller_on_an_event_loop_starts_the_prefetch_and_keeps_taking_from_memory():
    """The prefetch point of a range sent every caller on an event loop to a thread (cached_values() gave None) until
    one of them started the background fetch there; now the first starts it, and each is answered from memory."""
    from django_segment_seq.api import cached_values

    Sequence.objects.create(name="s", step=100)
    got = [next_value("s")]  # the first range, fetched in the foreground
    for _ in range(98):
        numbers = cached_values("s", 1)
        assert numbers is not None, f"sent to a thread at {got[-1] + 1}, with {100 - len(got)} numbers in the range"
        got.extend(numbers)
    assert wait_for_prefetch(30)
    got.extend(next_value("s") for _ in range(101))
    assert_unique(got, 200)
    assert stats("s").background_fetches >= 1 and stats("s").foreground_fetches == 1
