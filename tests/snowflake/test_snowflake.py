"""Snowflake ids: layouts, the clock, worker id leases raced, expired, taken over and inherited through fork."""

from __future__ import annotations

import itertools
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.core import checks
from django.test.utils import override_settings

from django_segment_seq import (
    ClockMovedBackwards,
    SequenceError,
    SnowflakeField,
    WorkerIdsExhausted,
    WorkerLeaseExpired,
    live_worker_leases,
    next_snowflake,
    parse_snowflake,
    release_worker_leases,
)
from django_segment_seq.conf import DEFAULTS
from django_segment_seq.models import WorkerLease
from django_segment_seq.snowflake import generator
from django_segment_seq.snowflake.layouts import CLASSIC, JS53, LAYOUTS
from tests.conftest import ROOT, assert_unique, worker_env

TIMEOUT = 120


@pytest.fixture
def leases(transactional_db):
    """Leases live on private connections, outside the test's transaction: give them back after each test."""
    release_worker_leases()
    yield
    release_worker_leases()


def snowflake_settings(**options: object):
    from django.conf import settings

    return override_settings(SEGMENT_SEQ={**settings.SEGMENT_SEQ, **options})


class Worker:
    """A tests.support.snowflake_workers process, read line by line with a timeout."""

    def __init__(self, tmp_path: Path, mode: str, layout: str = "classic", count: int = 1, **options: object) -> None:
        self.out = tmp_path / f"{mode}-{time.monotonic_ns()}.txt"
        env = worker_env(SEGMENT_SEQ_TEST_SNOWFLAKE=json.dumps(options))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.snowflake_workers", mode, str(self.out), layout, str(count)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def line(self, timeout: float = TIMEOUT) -> list[str]:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.proc.kill()
            raise AssertionError(f"worker said nothing for {timeout} s")
        text = self.proc.stdout.readline()
        if not text:
            self.proc.wait(TIMEOUT)
            raise AssertionError(f"worker ended (exit {self.proc.returncode}):\n{self.proc.stderr.read()[-3000:]}")
        return text.split()

    def send(self, text: str = "go") -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def finish(self) -> int:
        _, err = self.proc.communicate(timeout=TIMEOUT)
        assert self.proc.returncode in (0, 3), err[-3000:]
        return self.proc.returncode

    def ids(self, suffix: str = "") -> tuple[int, list[int]]:
        worker_id, *ids = (int(line) for line in Path(str(self.out) + suffix).read_text().split())
        return worker_id, ids

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(TIMEOUT)


@pytest.fixture
def workers(tmp_path):
    started: list[Worker] = []

    def start(mode: str, layout: str = "classic", count: int = 1, **options: object) -> Worker:
        worker = Worker(tmp_path, mode, layout, count, **options)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()


# --- layouts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_layout_bits_and_round_trip(layout):
    shape = LAYOUTS[layout]
    assert shape.bits == (63 if layout == "classic" else 53)
    epoch = DEFAULTS["SNOWFLAKE_EPOCH_MS"]
    for ticks, worker_id, counter in [(0, 0, 0), (1, 2, 3), (shape.max_time, shape.max_worker, shape.max_counter)]:
        value = shape.compose(ticks, worker_id, counter)
        assert 0 <= value < 2**shape.bits
        parts = parse_snowflake(value, layout=layout, epoch=epoch)
        assert (parts.worker_id, parts.counter) == (worker_id, counter)
        expected_ms = epoch + ticks * shape.unit_ms
        assert parts.instant.timestamp() * 1000 == pytest.approx(expected_ms, abs=1)


def test_layout_lifetimes_and_rates():
    assert CLASSIC.lifetime.days // 365 == 69 and CLASSIC.ids_per_second == 4_096_000
    assert JS53.lifetime.days // 365 == 68 and JS53.ids_per_second == 16_384
    assert JS53.compose(JS53.max_time, JS53.max_worker, JS53.max_counter) == 2**53 - 1


def test_parse_refuses_what_no_layout_makes():
    with pytest.raises(ValueError, match="between 0 and 2\\*\\*53"):
        parse_snowflake(2**53, layout="js53")
    with pytest.raises(ValueError):
        parse_snowflake(-1)
    with pytest.raises(TypeError):
        parse_snowflake("12")
    with pytest.raises(ValueError, match="Unknown Snowflake layout"):
        parse_snowflake(1, layout="nope")
    with pytest.raises(ValueError, match="Unknown Snowflake layout"):
        next_snowflake(layout="nope")


# --- one process ----------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_ids_increase_and_parse_to_this_process(leases, layout):
    before = time.time()
    ids = [next_snowflake(layout=layout) for _ in range(2000 if layout == "classic" else 200)]
    after = time.time()
    assert ids == sorted(ids)
    assert_unique(ids)
    held = generator.held_worker_ids()[layout]
    unit = LAYOUTS[layout].unit_ms / 1000
    for value in (ids[0], ids[-1]):
        parts = parse_snowflake(value, layout=layout)
        assert parts.worker_id == held
        assert before - unit <= parts.instant.timestamp() <= after
    live = [(lease.layout, lease.worker_id) for lease in live_worker_leases()]
    assert (layout, held) in live


def test_live_leases_and_release(leases):
    next_snowflake()
    next_snowflake(layout="js53")
    live = live_worker_leases()
    assert sorted(lease.layout for lease in live) == ["classic", "js53"]
    for lease in live:
        assert lease.owner.endswith(f":{os.getpid()}")
        assert 0 < lease.expires_in <= DEFAULTS["SNOWFLAKE_LEASE_SECONDS"]
        assert lease.acquired_at <= lease.renewed_at < lease.expires_at
    release_worker_leases()
    assert live_worker_leases() == []
    assert WorkerLease.objects.count() == 2  # kept for the next holder, with the time of its last id


@pytest.mark.parametrize("path", ["lock-free", "locked"])
def test_threads_get_distinct_increasing_ids(leases, path):
    """Threads switched as often as the interpreter allows: no id twice, each thread's ids increasing."""
    take = next_snowflake if path == "lock-free" else (lambda: generator._take("classic"))
    threads, count = 8, 3_000
    got: dict[int, list[int]] = {}
    start = threading.Barrier(threads)

    def run(number: int) -> None:
        start.wait()
        got[number] = [take() for _ in range(count)]

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        started = [threading.Thread(target=run, args=(number,)) for number in range(threads)]
        for thread in started:
            thread.start()
        for thread in started:
            thread.join(TIMEOUT)
    finally:
        sys.setswitchinterval(old_interval)
    assert sorted(got) == list(range(threads))
    for ids in got.values():
        assert all(a < b for a, b in itertools.pairwise(ids))
    everything = assert_unique([value for ids in got.values() for value in ids], threads * count)
    ticks = {parse_snowflake(value).instant for value in everything}
    assert len(ticks) > 1  # the threads crossed ticks, where a new tick's ids are published
    assert {parse_snowflake(value).worker_id for value in everything} == {generator.held_worker_ids()["classic"]}


class FakeClock:
    """The wall clock ids read, shifted from the real one, with a sleep that moves it when it is frozen."""

    def __init__(self) -> None:
        self.shift_ns = 0
        self.frozen: int | None = None
        self.slept = 0.0

    def wall_ns(self) -> int:
        return self.frozen if self.frozen is not None else time.time_ns() - self.shift_ns

    def sleep(self, seconds: float) -> None:
        self.slept += seconds
        if self.frozen is not None:
            self.frozen += max(int(seconds * 1e9), 1)
        else:
            time.sleep(seconds)


@pytest.fixture
def fake_clock(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(generator, "wall_ns", clock.wall_ns)
    monkeypatch.setattr(generator, "sleep", clock.sleep)
    return clock


def test_small_step_back_is_waited_out(leases, fake_clock):
    with snowflake_settings(SNOWFLAKE_CLOCK_TOLERANCE=0.2):
        first = next_snowflake()
        taken = time.monotonic()
        time.sleep(0.002)  # into a later tick: a step is seen when a tick ends
        fake_clock.shift_ns = 80_000_000
        second = next_snowflake()
        done = time.monotonic()
    assert second > first
    # The clock went back 80 ms: the second id waited (really slept) until it passed the first id's tick.
    assert fake_clock.slept > 0
    assert done - taken >= 0.078
    assert parse_snowflake(second).instant >= parse_snowflake(first).instant


def test_large_step_back_raises_until_the_clock_catches_up(leases, fake_clock):
    with snowflake_settings(SNOWFLAKE_CLOCK_TOLERANCE=0.1):
        first = next_snowflake()
        time.sleep(0.002)
        fake_clock.shift_ns = 5_000_000_000
        for _ in range(2):
            with pytest.raises(ClockMovedBackwards) as raised:
                next_snowflake()
        assert isinstance(raised.value, SequenceError)
        assert 4900 < raised.value.behind_ms < 5100
        fake_clock.shift_ns = 0
        assert next_snowflake() > first


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_used_up_counter_waits_for_the_next_tick(leases, fake_clock, layout):
    shape = LAYOUTS[layout]
    unit_ns = shape.unit_ms * 10**6
    next_snowflake(layout=layout)
    tick = time.time_ns() // unit_ns + 1
    fake_clock.frozen = tick * unit_ns  # a fresh tick, where the clock stays until the generator sleeps
    ids = [next_snowflake(layout=layout) for _ in range(2 * shape.max_counter + 10)]
    assert_unique(ids)
    assert ids == sorted(ids)
    by_tick: dict[object, list[int]] = {}
    for value in ids:
        parts = parse_snowflake(value, layout=layout)
        by_tick.setdefault(parts.instant, []).append(parts.counter)
    instants = sorted(by_tick)
    frozen = parse_snowflake(shape.compose(tick - DEFAULTS["SNOWFLAKE_EPOCH_MS"] // shape.unit_ms, 0, 0), layout=layout)
    assert by_tick[frozen.instant] == list(range(shape.max_counter + 1))  # the whole counter, then...
    later = instants[instants.index(frozen.instant) + 1]
    assert by_tick[later][0] == 0  # ...the next tick, reached by waiting
    assert fake_clock.slept > 0


def test_no_ids_after_the_lease_deadline_without_renewal(leases):
    with snowflake_settings(SNOWFLAKE_LEASE_SECONDS=1):
        next_snowflake()
        started = time.monotonic()  # after the lease was taken: the deadline is at most 0.75 s from here
        generator._renewer.stop(pause=True)
        last_ok = started
        give_up = started + 30
        with pytest.raises(WorkerLeaseExpired) as raised:
            while time.monotonic() < give_up:
                before = time.monotonic()
                next_snowflake()
                last_ok = before
        assert last_ok - started < 0.75  # no call that began after the deadline got an id
        assert raised.value.worker_id == generator.held_worker_ids()["classic"]
        # Renewals back: the same lease is renewed (nobody took it) and ids resume.
        generator._renewer.stop(pause=False)
        generator._renewer.ensure_running(0.05)
        deadline = time.monotonic() + 10
        while True:
            try:
                next_snowflake()
                break
            except WorkerLeaseExpired:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert generator.held_worker_ids()["classic"] == raised.value.worker_id


# --- many processes -------------------------------------------------------------------------------


def test_leases_raced_by_many_processes_are_unique(leases, workers):
    count = 20_000
    started = [workers("ids", "classic", count) for _ in range(8)]
    reported = [int(worker.line()[1]) for worker in started]
    assert_unique(reported)
    live = {lease.worker_id for lease in live_worker_leases() if lease.layout == "classic"}
    assert set(reported) <= live
    for worker in started:
        worker.send("go")
    for worker in started:
        assert worker.line() == ["done"]
        worker.send("exit")
    got: list[int] = []
    for worker, worker_id in zip(started, reported, strict=True):
        assert worker.finish() == 0
        file_worker, ids = worker.ids()
        assert file_worker == worker_id
        assert {parse_snowflake(value).worker_id for value in ids} == {worker_id}
        got.extend(ids)
    assert_unique(got, 8 * count)
    assert [lease for lease in live_worker_leases() if lease.worker_id in reported] == []  # released at exit


def test_lease_expiry_and_takeover(leases, workers):
    options = {"SNOWFLAKE_LEASE_SECONDS": 3, "SNOWFLAKE_MAX_WORKERS": 1}
    holder = workers("stall", **options)
    assert holder.line() == ["ready", "0"]
    successor = workers("wait", count=1000, **options)
    # While the holder's lease is live, nobody else gets a worker id.
    with snowflake_settings(**options), pytest.raises(WorkerIdsExhausted, match="1 leases are live"):
        next_snowflake()
    # The holder cannot renew: it stops issuing before its lease expires, and then another process takes it.
    word, last_ok = holder.line()
    assert word == "stopped" and float(last_ok) < 0.75 * 3
    assert successor.line()[0] == "done"
    holder.finish()
    successor.finish()
    old_worker, old_ids = holder.ids()
    new_worker, new_ids = successor.ids()
    assert old_worker == new_worker == 0
    old_last = max(parse_snowflake(v).instant for v in old_ids)
    assert old_last < min(parse_snowflake(v).instant for v in new_ids)
    assert_unique(old_ids + new_ids)
    row = WorkerLease.objects.get(layout="classic", worker_id=0)
    assert row.acquired_at > old_last  # taken over only after the holder's last id


def test_all_worker_ids_leased_is_a_named_error_with_the_count(leases, workers):
    options = {"SNOWFLAKE_MAX_WORKERS": 2}
    holders = [workers("ids", "js53", 1, **options) for _ in range(2)]
    held = sorted(int(holder.line()[1]) for holder in holders)
    assert held == [0, 1]
    with snowflake_settings(**options):
        with pytest.raises(WorkerIdsExhausted) as raised:
            next_snowflake(layout="js53")
        assert (raised.value.live, raised.value.total) == (2, 2)
        assert "all 2 worker ids are leased and 2 leases are live" in str(raised.value)
        # A holder that exits gives its worker id back at once: it is not burned until it expires.
        holders[0].send("go")
        assert holders[0].line() == ["done"]
        holders[0].send("exit")
        holders[0].finish()
        assert len(live_worker_leases()) == 1
        time.sleep(generator.RETRY_PAUSE)  # refused callers are answered from memory for this long
        value = next_snowflake(layout="js53")
        assert parse_snowflake(value, layout="js53").worker_id == holders[0].ids()[0]


def test_fork_child_takes_its_own_lease(leases, workers):
    worker = workers("fork", "classic", 5000)
    assert worker.line() == ["done", "0"]
    assert worker.finish() == 0
    parent_worker, parent_ids = worker.ids()
    child_worker, child_ids = worker.ids(".child")
    assert parent_worker != child_worker
    assert {parse_snowflake(v).worker_id for v in child_ids} == {child_worker}
    assert_unique(parent_ids + child_ids, 15_000)


# --- the field ------------------------------------------------------------------------------------


def test_field_as_primary_key_and_js53_unique(leases):
    from tests.testapp.models import Event

    first = Event.objects.create(note="a")
    second = Event.objects.create(note="b")
    assert second.pk > first.pk > 0
    assert 0 < first.public_id < 2**53 and first.public_id != second.public_id
    stored = Event.objects.get(pk=first.pk)
    assert (stored.pk, stored.public_id) == (first.pk, first.public_id)
    stored.note = "changed"
    stored.save()
    stored.refresh_from_db()
    assert (stored.pk, stored.public_id) == (first.pk, first.public_id)
    explicit = Event.objects.create(id=12345, public_id=678, note="given")
    assert Event.objects.get(pk=12345).public_id == 678 == explicit.public_id
    assert parse_snowflake(first.pk).worker_id == generator.held_worker_ids()["classic"]
    assert parse_snowflake(first.public_id, layout="js53").worker_id == generator.held_worker_ids()["js53"]


def test_field_with_bulk_create(leases):
    from tests.testapp.models import Event

    created = Event.objects.bulk_create([Event(note=str(i)) for i in range(500)])
    pks = [event.pk for event in created]
    assert None not in pks and pks == sorted(pks)
    assert_unique(pks, 500)
    assert_unique([event.public_id for event in created], 500)
    assert sorted(Event.objects.values_list("pk", flat=True)) == pks
    assert set(Event.objects.values_list("public_id", flat=True)) == {event.public_id for event in created}


def test_field_deconstructs_and_checks_its_layout():
    field = SnowflakeField(layout="js53", unique=True)
    _name, path, _args, kwargs = field.deconstruct()
    assert path == "django_segment_seq.snowflake.fields.SnowflakeField"
    assert kwargs == {"layout": "js53", "unique": True}
    assert "layout" not in SnowflakeField(primary_key=True).deconstruct()[3]
    bad = SnowflakeField(layout="js64")
    bad.set_attributes_from_name("x")
    assert [error.id for error in bad.check() if isinstance(error, checks.Error)] == ["django_segment_seq.E030"]


@pytest.mark.parametrize(
    "options",
    [
        {"SNOWFLAKE_LEASE_SECONDS": 0},
        {"SNOWFLAKE_EPOCH_MS": "2026-01-01"},
        {"SNOWFLAKE_CLOCK_TOLERANCE": -1},
        {"SNOWFLAKE_MAX_WORKERS": 0},
        {"SNOWFLAKE_MAX_WORKERS": 2000},
    ],
)
def test_settings_are_checked(options):
    from django_segment_seq.checks import check_settings

    with override_settings(SEGMENT_SEQ=options):
        assert [error.id for error in check_settings()] == ["django_segment_seq.E003"]


def test_admin_lists_leases_read_only(leases, client, django_user_model):
    user = django_user_model.objects.create_superuser("admin", "admin@example.com", "pw")
    client.force_login(user)
    next_snowflake()
    page = client.get("/admin/django_segment_seq/workerlease/")
    assert page.status_code == 200
    assert f":{os.getpid()}" in page.content.decode()
    assert client.get("/admin/django_segment_seq/workerlease/add/").status_code == 403
    row = WorkerLease.objects.get()
    assert client.post(f"/admin/django_segment_seq/workerlease/{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert WorkerLease.objects.filter(pk=row.pk).exists()
