"""PostgreSQL failover under load: a primary crashes while six processes take numbers through libpq's multi-host
connection, the standby is promoted, and every number handed out before and after is checked for repeats.

With a synchronous standby nothing committed is lost, so nothing repeats even without the fence. With an
asynchronous standby that is behind, the ranges the old primary committed last are lost: without the fence
(FAILOVER_SKIP 0) they are handed out again; with it, none is. Two sequences are taken: "used", whose ranges
the standby received before it fell behind, and "fresh", made before that but first used in what the standby
never received. A run of a fault proves the fault happened before it is judged: the standby behind at the
crash, and numbers of each sequence handed out by the old primary and never received; a run where the timing
failed to make that happen is tried again, ATTEMPTS times at most, then fails.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.failover_worker import SEQUENCES, STEP
from tests.support.pg_standby import StandbyPair
from tests.support.servers import START_TIMEOUT, PostgresServer

WORKERS = 6
# How long the standby is held behind before the primary crashes, as measured with an asynchronous standby.
LAG = 1.5
# How long the workers run after the promotion at least, and at most while one of them has not yet taken a range
# of the new primary (a worker's reconnection is slow on a busy machine; it is the fault's outcome, not its speed,
# that the test judges: longest_pause bounds the speed).
AFTER = 1.5
AFTER_AT_MOST = 30.0
DATABASE = "failover"
# A run whose fault did not happen (the timing of processes on a busy machine) is tried again this many times.
ATTEMPTS = 3
# Long enough that A, cut off by a promotion that takes seconds, still makes ids (for three quarters of it)
# when B starts on the new primary: what makes repeats possible without the fence.
SNOWFLAKE_LEASE = 12.0
ROWS = "SELECT name, value FROM django_segment_seq_sequence"
LEASES = "SELECT worker_id, owner, token FROM django_segment_seq_workerlease"


@pytest.fixture
def standby_pair(tmp_path):
    """Start a primary with a standby (synchronous or not); everything started is stopped, also on failure."""
    missing = PostgresServer.missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI runs the failover tests and cannot here: {missing}")
        pytest.skip(missing)
    pairs: list[StandbyPair] = []
    servers = Path(tempfile.mkdtemp(prefix="segseq-failover-"))
    os.chmod(servers, 0o755)  # the servers run as postgres, which cannot enter pytest's own temporary folders

    def start(synchronous: bool) -> tuple[StandbyPair, subprocess.Popen[str]]:
        """The pair, and the migration started on it (the tables, and the SEQUENCES rows): wait_ready() waits
        for it while the workers start up."""
        workdir = servers / str(len(pairs))
        workdir.mkdir()
        os.chmod(workdir, 0o755)
        pair = StandbyPair(workdir, synchronous)
        pairs.append(pair)
        pair.primary.execute(f"CREATE DATABASE {DATABASE}")
        return pair, run_worker("migrate", pair, tmp_path, {}, index=-1)

    yield start
    for pair in pairs:
        pair.stop()
    shutil.rmtree(servers, ignore_errors=True)


def run_worker(
    mode: str,
    pair: StandbyPair,
    tmp_path: Path,
    segment_seq: dict[str, object],
    index: int = 0,
    go: Path | None = None,
    sequence: str = "",
):
    out, stop = tmp_path / f"worker{index}.json", tmp_path / "stop"
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        SEGMENT_SEQ_TEST_GO=str(go or ""),
        SEGMENT_SEQ_TEST_MARK=str(tmp_path / "crashed"),
        SEGMENT_SEQ_TEST_FAULT=str(tmp_path / "crashing"),
        SEGMENT_SEQ_TEST_SEQUENCE=sequence,
        # Without the fence, the workers keep no memory of what they wrote to the rows, as processes restarted
        # after a failover have none: what the fence alone does is shown, not what a process's own memory of a
        # row that went back (allocator/seen.py, the restore guard) adds for the processes that lived through it.
        SEGMENT_SEQ_TEST_NO_ROW_MEMORY="1" if segment_seq.get("FAILOVER_SKIP") == 0 else "",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.failover_worker", mode, pair.hosts, pair.ports, DATABASE,
         str(out), str(stop), json.dumps(segment_seq)],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def wait_ready(workers: list[subprocess.Popen[str]], tmp_path: Path, migration: subprocess.Popen[str]) -> None:
    """Until the migration has ended and every worker is set up and waits for its go: their start-up, slow on a
    busy machine, is not the test's."""
    try:
        _, err = migration.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        migration.kill()
        pytest.fail("the migration of the failover database hung")
    assert migration.returncode == 0, err[-3000:]
    deadline = time.monotonic() + START_TIMEOUT
    for index, worker in enumerate(workers):
        while not (tmp_path / f"worker{index}.json.ready").exists():
            if worker.poll() is not None:
                pytest.fail(f"worker {index} ended before it was ready: {worker.stderr.read()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"worker {index} was not ready in {START_TIMEOUT} s")
            time.sleep(0.02)


def wait_went_on(workers: list[subprocess.Popen[str]], tmp_path: Path) -> None:
    """AFTER seconds, and then until every worker has taken a range after the crash or AFTER_AT_MOST have passed
    (the assertions on went_on then say which did not)."""
    started = time.monotonic()
    time.sleep(AFTER)
    while time.monotonic() - started < AFTER_AT_MOST:
        if all((tmp_path / f"worker{index}.json.went_on").exists() for index in range(len(workers))):
            return
        time.sleep(0.1)


def stop_workers(workers: list[subprocess.Popen[str]], tmp_path: Path) -> None:
    """Tell the workers to stop and wait for each, within a bound: a hang fails the test."""
    (tmp_path / "stop").touch()
    for worker in workers:
        try:
            _, err = worker.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            pytest.fail("a worker hung after the failover")
        assert worker.returncode == 0, err[-3000:]


def results(tmp_path: Path, count: int) -> list[dict]:
    """What `count` workers wrote, each run's "marked" set (all its numbers when it never saw the crash)."""
    runs = [json.loads((tmp_path / f"worker{index}.json").read_text()) for index in range(count)]
    for run in runs:
        if run["marked"] is None:
            run["marked"] = len(run["numbers"])
    return runs


def repeats_in(numbers: list[int]) -> int:
    """How many numbers came more than once (a number handed out three times counts two)."""
    return sum(times - 1 for times in collections.Counter(numbers).values() if times > 1)


@dataclass
class Failover:
    """One run of the six workers through a crash and promotion (or as long on a healthy pair), and what it proved."""

    numbers: dict[str, list[int]] = field(repr=False)
    errors: dict[str, int]
    longest_pause: float
    per_second: float
    # Numbers each worker handed out after the crash: more than STEP means it took a range on the new primary.
    went_on: list[int]
    promotion: float = 0.0
    # Bytes of WAL the standby had not received at the crash, and per sequence the numbers the old primary
    # handed out that the standby never received (None without a crash).
    behind: int | None = None
    lost: dict[str, int] = field(default_factory=dict)
    # The first message of each kind of error, from whichever worker saw it first.
    messages: dict[str, str] = field(default_factory=dict)
    # Errors callers met before the crash, on a healthy primary: there must be none.
    errors_before_fault: int = 0

    @property
    def repeats(self) -> int:
        return sum(repeats_in(numbers) for numbers in self.numbers.values())

    def add(self, names: list[str], runs: list[dict], elapsed: float) -> None:
        """The workers' runs, each of the sequence of the same index in `names`."""
        for name, worker in zip(names, runs, strict=True):
            self.numbers.setdefault(name, []).extend(worker["numbers"])
            self.went_on.append(len(worker["numbers"]) - worker["marked"])
            for error, count in worker["errors"].items():
                self.errors[error] = self.errors.get(error, 0) + count
            for error, message in worker.get("messages", {}).items():
                self.messages.setdefault(error, message)
            self.errors_before_fault += worker["errors_before_fault"]
        self.longest_pause = max(worker["longest_pause"] for worker in runs)
        self.per_second = sum(map(len, self.numbers.values())) / elapsed

    def count_lost(
        self, names: list[str], runs: list[dict], committed: dict[str, int], received: dict[str, int]
    ) -> None:
        """Per sequence, the numbers handed out before the crash above the standby's value and up to the primary's:
        handed out from ranges the standby never received."""
        for name in SEQUENCES:
            before = {
                n for w, run in zip(names, runs, strict=True) if w == name for n in run["numbers"][: run["marked"]]
            }
            self.lost[name] = sum(1 for n in before if received[name] < n <= committed[name])

    def missed(self) -> str | None:
        """Why the fault an asynchronous failover test needs did not happen, or None when it did."""
        if not self.behind or self.behind <= 0:
            return f"the standby was not behind at the crash ({self.behind} bytes)"
        for name, lost in self.lost.items():
            if lost == 0:
                return f"no number of {name!r} the old primary handed out was lost (the standby had them all)"
        return None


def crash_and_promote(
    standby_pair, tmp_path, *, synchronous: bool, failover_skip: int | None, crash: bool = True, prefetch: bool = False
) -> Failover:
    """Run six workers through a crash of the primary and the standby's promotion; what they handed out.

    Half take "used" from the start; the standby catches up, falls behind (when asynchronous), and only then
    the other half take "fresh". Without `crash` they run as long on a healthy pair: the figures to compare with.
    """
    pair, migration = standby_pair(synchronous)
    # Fixed ranges of 10, as measured: every worker goes back to the table many times a second.
    segment_seq: dict[str, object] = {"PREFETCH": prefetch, "ADAPTIVE_STEP": prefetch}
    if failover_skip is not None:
        segment_seq["FAILOVER_SKIP"] = failover_skip
    go = {name: tmp_path / f"go-{name}" for name in SEQUENCES}
    names = [SEQUENCES[index * len(SEQUENCES) // WORKERS] for index in range(WORKERS)]
    workers = [
        run_worker("take", pair, tmp_path, segment_seq, index, go[name], name) for index, name in enumerate(names)
    ]
    run = Failover({}, {}, 0.0, 0.0, [])
    try:
        wait_ready(workers, tmp_path, migration)
        started = time.monotonic()
        go["used"].touch()
        time.sleep(0.5)
        pair.wait_caught_up()  # "fresh" as made, "used" with ranges taken: the standby has both
        if not synchronous and crash:
            pair.primary.pause_replication()  # from here on, what the primary commits never reaches the standby
        go["fresh"].touch()
        time.sleep(LAG)
        if crash:
            position, before = pair.primary.committed(DATABASE, ROWS)
            (tmp_path / "crashing").touch()
            pair.primary.crash()
            (tmp_path / "crashed").touch()
            run.behind, at_crash = pair.standby.received(DATABASE, ROWS, position)
            promoting = time.monotonic()
            pair.standby.promote()
            run.promotion = time.monotonic() - promoting
            wait_went_on(workers, tmp_path)
        else:
            time.sleep(AFTER)
    finally:
        stop_workers(workers, tmp_path)
    runs = results(tmp_path, WORKERS)
    run.add(names, runs, time.monotonic() - started)
    if crash:
        run.count_lost(names, runs, dict(before), dict(at_crash))
    return run


def failover_proved(standby_pair, tmp_path, *, failover_skip: int | None) -> Failover:
    """An asynchronous failover whose fault is shown to have happened, tried up to ATTEMPTS times."""
    reasons = []
    for attempt in range(ATTEMPTS):
        folder = tmp_path / f"attempt{attempt}"
        folder.mkdir()
        run = crash_and_promote(standby_pair, folder, synchronous=False, failover_skip=failover_skip)
        reason = run.missed()
        if reason is None:
            return run
        print(f"\nattempt {attempt + 1}: the scenario did not happen ({reason}); again")
        reasons.append(reason)
    pytest.fail(f"the failover this test needs did not happen in {ATTEMPTS} tries: {reasons}")


def report(label: str, run: Failover) -> None:
    total = sum(map(len, run.numbers.values()))
    per_sequence = ", ".join(
        f"{name} {len(numbers)} ({repeats_in(numbers)} repeats" + (f", {run.lost[name]} lost" if run.lost else "") + ")"
        for name, numbers in run.numbers.items()
    )
    behind = "" if run.behind is None else f", standby {run.behind / 1024:.0f} kB behind"
    print(
        f"\n{label}: {total} numbers ({run.per_second:,.0f}/s: {per_sequence}), {run.repeats} repeats, "
        f"errors {run.errors}, promotion {run.promotion:.2f} s, longest pause {run.longest_pause:.2f} s{behind}"
    )


@pytest.mark.parametrize("prefetch", [False, True], ids=["fixed-ranges", "app-defaults"])
def test_a_healthy_pair_for_comparison(standby_pair, tmp_path, prefetch):
    """No fault: with fixed ranges of 10, and with the app's background fetches and adaptive step, no caller is
    refused (a fetch slowed by the standby's confirmation is waited for or joined)."""
    run = crash_and_promote(
        standby_pair, tmp_path, synchronous=False, failover_skip=None, crash=False, prefetch=prefetch
    )
    report(f"asynchronous standby, no failover, prefetch {prefetch}", run)
    assert run.repeats == 0 and run.errors == {}, run.messages
    assert run.longest_pause < 10


def test_synchronous_standby_loses_nothing_even_without_the_fence(standby_pair, tmp_path):
    run = crash_and_promote(standby_pair, tmp_path, synchronous=True, failover_skip=0)
    report("synchronous, fence off", run)
    assert run.repeats == 0
    assert set(run.errors) <= {"SequenceUnavailable"}, run.messages
    assert run.errors_before_fault == 0, run.messages  # the primary was healthy until the crash
    assert min(run.went_on) > STEP, run.went_on  # every worker took ranges after the failover by itself
    assert run.longest_pause < 30


def test_asynchronous_failover_repeats_numbers_without_the_fence(standby_pair, tmp_path):
    run = failover_proved(standby_pair, tmp_path, failover_skip=0)
    report("asynchronous, 1.5 s behind, fence off", run)
    # The hole the fence closes, shown on the real thing: for a sequence used before, and one first used after.
    assert all(repeats_in(numbers) > 0 for numbers in run.numbers.values()), run.lost


def test_asynchronous_failover_repeats_nothing_with_the_fence(standby_pair, tmp_path):
    run = failover_proved(standby_pair, tmp_path, failover_skip=None)  # the default skip
    report("asynchronous, 1.5 s behind, fence on", run)
    assert run.repeats == 0
    assert set(run.errors) <= {"SequenceUnavailable"}, run.messages
    assert run.errors_before_fault == 0, run.messages  # the primary was healthy until the crash
    assert min(run.went_on) > STEP, run.went_on
    assert run.longest_pause < 30


@dataclass
class SnowflakeFailover:
    """One Snowflake run through a failover: repeats, errors, and what it proved."""

    repeats: int
    errors: dict[str, int]
    # A held a worker id on the old primary, made ids with it, and the standby never received its lease.
    a_lease_lost: bool
    b_made_ids: bool


def run_snowflake_failover(standby_pair, tmp_path, *, fenced: bool) -> SnowflakeFailover:
    """Three processes make Snowflake ids with two worker ids across an asynchronous failover; repeats and errors.

    C holds a worker id from before the standby falls behind; A takes the other one in the stretch the standby
    never receives; B starts after the promotion, finds that worker id free, and takes it while A still makes
    ids with it, until A's next renewal finds its row gone (or A, renewing first, takes it back and B finds
    none free).
    """
    pair, migration = standby_pair(False)
    segment_seq: dict[str, object] = {"SNOWFLAKE_LEASE_SECONDS": SNOWFLAKE_LEASE, "SNOWFLAKE_MAX_WORKERS": 2}
    if not fenced:
        segment_seq["FAILOVER_SKIP"] = 0
    go = [tmp_path / f"go{index}" for index in range(3)]  # C, A, B
    workers = [run_worker("snowflake", pair, tmp_path, segment_seq, index, go[index]) for index in range(3)]
    try:
        wait_ready(workers, tmp_path, migration)
        go[0].touch()
        time.sleep(1.0)
        pair.wait_caught_up()  # C's lease is on the standby
        pair.primary.pause_replication()
        go[1].touch()
        time.sleep(LAG)
        _position, before = pair.primary.committed(DATABASE, LEASES)
        pair.primary.crash()
        (tmp_path / "crashed").touch()
        _behind, at_crash = pair.standby.received(DATABASE, LEASES, _position)
        pair.standby.promote()
        go[2].touch()
        time.sleep(3.0 + (SNOWFLAKE_LEASE if fenced else 0.0))  # fenced, B's first id comes a lease time later
    finally:
        stop_workers(workers, tmp_path)
    runs = results(tmp_path, 3)
    errors: collections.Counter[str] = collections.Counter()
    for worker in runs:
        errors.update(worker["errors"])
    a_leases = {row for row in before if row[1].endswith(f":{workers[1].pid}")}
    # C goes on throughout; A or B, whichever takes the lost worker id on the new primary first, goes on with it
    # (the other finds both worker ids held: WorkerIdsExhausted).
    assert runs[0]["numbers"] and (runs[1]["numbers"] or runs[2]["numbers"]), [run["errors"] for run in runs]
    return SnowflakeFailover(
        repeats_in([number for worker in runs for number in worker["numbers"]]),
        dict(errors),
        bool(a_leases) and not a_leases & set(at_crash) and runs[1]["marked"] > 0,
        bool(runs[2]["numbers"]),
    )


def snowflake_failover_proved(standby_pair, tmp_path, *, fenced: bool) -> SnowflakeFailover:
    """A Snowflake failover in which A's lease is lost (and, unfenced, B takes its worker id), tried ATTEMPTS times."""
    for attempt in range(ATTEMPTS):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        run = run_snowflake_failover(standby_pair, folder, fenced=fenced)
        print(
            f"\nSnowflake, asynchronous, fence {'on' if fenced else 'off'}: {run.repeats} repeats, errors {run.errors}"
        )
        if run.a_lease_lost and (fenced or run.b_made_ids):
            return run
        # Now and then A, renewing first on the new primary, takes its worker id back and B finds none free.
        print(f"attempt {attempt + 1}: A's lease lost {run.a_lease_lost}, B made ids {run.b_made_ids}; again")
    pytest.fail(f"the Snowflake failover this test needs did not happen in {ATTEMPTS} tries")


def test_snowflake_ids_repeat_after_an_asynchronous_failover_without_the_fence(standby_pair, tmp_path):
    run = snowflake_failover_proved(standby_pair, tmp_path, fenced=False)
    assert run.repeats > 0


def test_snowflake_ids_do_not_repeat_after_an_asynchronous_failover_with_the_fence(standby_pair, tmp_path):
    run = snowflake_failover_proved(standby_pair, tmp_path, fenced=True)
    assert run.repeats == 0
    assert run.errors.get("WorkerIdFenced", 0) > 0  # B was told when its ids would start, not left hanging
    # A, whose lease the failover lost, finds both worker ids held by C and B once its renewal fails.
    assert set(run.errors) <= {"WorkerIdFenced", "WorkerIdsExhausted", "SequenceUnavailable", "WorkerLeaseExpired"}


def check_ids(pair: StandbyPair, tmp_path: Path, gapless: bool, commit: str = "") -> list[str]:
    """What `manage.py check --database default` reports for a project on `pair`, with a gapless field or not
    and synchronous_commit as `commit` sets it (the server's own when empty)."""
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        SEGMENT_SEQ_TEST_GAPLESS="1" if gapless else "",
        SEGMENT_SEQ_TEST_SYNCHRONOUS_COMMIT=commit,
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.failover_worker", "check", pair.hosts, pair.ports, DATABASE, "-", "-",
         "{}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def test_the_check_names_gapless_numbers_on_a_primary_with_an_asynchronous_standby(standby_pair, tmp_path):
    asynchronous, first = standby_pair(False)
    synchronous, second = standby_pair(True)
    wait_ready([], tmp_path, first)
    wait_ready([], tmp_path, second)
    # Gapless numbers commit on the primary alone: a promoted asynchronous standby may never have seen them.
    assert "django_segment_seq.W005" in check_ids(asynchronous, tmp_path, gapless=True)
    assert "django_segment_seq.W005" in check_ids(synchronous, tmp_path, gapless=True, commit="local")
    assert "django_segment_seq.W005" not in check_ids(synchronous, tmp_path, gapless=True)
    assert "django_segment_seq.W005" not in check_ids(synchronous, tmp_path, gapless=True, commit="remote_apply")
    assert "django_segment_seq.W005" not in check_ids(asynchronous, tmp_path, gapless=False)
