"""PostgreSQL failover under load: a primary crashes while six processes take numbers through libpq's multi-host
connection, the standby is promoted, and every number handed out before and after is checked for repeats.

With a synchronous standby nothing committed is lost, so nothing repeats even without the fence. With an
asynchronous standby that is behind, the ranges the old primary committed last are lost: without the fence
(FAILOVER_SKIP 0) they are handed out again; with it, none is.
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
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.pg_standby import StandbyPair
from tests.support.servers import PostgresServer

WORKERS = 6
# How long the standby is held behind before the primary crashes, as measured with an asynchronous standby.
LAG = 1.5
DATABASE = "failover"
# Long enough that A, cut off by a promotion that takes seconds, still makes ids (for three quarters of it)
# when B starts on the new primary: what makes repeats possible without the fence.
SNOWFLAKE_LEASE = 12.0


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

    def start(synchronous: bool) -> StandbyPair:
        workdir = servers / str(len(pairs))
        workdir.mkdir()
        os.chmod(workdir, 0o755)
        pair = StandbyPair(workdir, synchronous)
        pairs.append(pair)
        pair.primary.execute(f"CREATE DATABASE {DATABASE}")
        run_worker("migrate", pair, tmp_path, {}).wait(timeout=120)
        pair.primary.execute(  # a small step: many ranges, so the lost ones are many too
            "INSERT INTO django_segment_seq_sequence (name, value, step, min_value, max_value, cycle, version, "
            "history, created, modified) "
            "VALUES ('failover', 0, 10, 1, 9223372036854775806, false, 0, '', now(), now())",
            DATABASE,
        )
        return pair

    yield start
    for pair in pairs:
        pair.stop()
    shutil.rmtree(servers, ignore_errors=True)


def run_worker(
    mode: str, pair: StandbyPair, tmp_path: Path, segment_seq: dict[str, object], index: int = 0, go: Path | None = None
):
    out, stop = tmp_path / f"worker{index}.json", tmp_path / "stop"
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.failover_worker", mode, pair.hosts, pair.ports, DATABASE,
         str(out), str(stop), json.dumps(segment_seq)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), SEGMENT_SEQ_TEST_GO=str(go or "")),
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


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


def results(tmp_path: Path, count: int) -> tuple[list[dict], list[int], collections.Counter[str], int]:
    """What `count` workers wrote: their runs, every number, the errors by kind, and how many numbers came twice."""
    runs = [json.loads((tmp_path / f"worker{index}.json").read_text()) for index in range(count)]
    numbers = [number for run in runs for number in run["numbers"]]
    errors: collections.Counter[str] = collections.Counter()
    for run in runs:
        errors.update(run["errors"])
    return runs, numbers, errors, sum(times - 1 for times in collections.Counter(numbers).values() if times > 1)


def crash_and_promote(
    standby_pair, tmp_path, *, synchronous: bool, failover_skip: int | None, crash: bool = True
) -> dict:
    """Run six workers through a crash of the primary and the standby's promotion; what they handed out.

    Without `crash` they run as long on a healthy pair: the figures to compare with.
    """
    pair = standby_pair(synchronous)
    # Fixed ranges of 10, as measured: every worker goes back to the table many times a second.
    segment_seq: dict[str, object] = {"PREFETCH": False, "ADAPTIVE_STEP": False}
    if failover_skip is not None:
        segment_seq["FAILOVER_SKIP"] = failover_skip
    workers = [run_worker("take", pair, tmp_path, segment_seq, index) for index in range(WORKERS)]
    started = time.monotonic()
    promoted = 0.0
    try:
        time.sleep(1.0)
        if not synchronous and crash:
            pair.primary.pause_replication()  # from here on, what the primary commits never reaches the standby
        time.sleep(LAG)
        if crash:
            crashed = time.monotonic()
            pair.primary.crash()
            pair.standby.promote()
            promoted = time.monotonic() - crashed
        time.sleep(1.5)
    finally:
        stop_workers(workers, tmp_path)
    elapsed = time.monotonic() - started
    runs, numbers, errors, repeats = results(tmp_path, WORKERS)
    after = [run["numbers"][-1] for run in runs if run["numbers"]]
    return {
        "numbers": numbers,
        "repeats": repeats,
        "errors": dict(errors),
        "longest_pause": max(run["longest_pause"] for run in runs),
        "promotion": promoted,
        "per_second": len(numbers) / elapsed,
        "last_numbers": after,
    }


def report(label: str, run: dict) -> None:
    print(
        f"\n{label}: {len(run['numbers'])} numbers ({run['per_second']:,.0f}/s), {run['repeats']} repeats, "
        f"errors {run['errors']}, "
        f"promotion {run['promotion']:.2f} s, longest pause {run['longest_pause']:.2f} s"
    )


def test_a_healthy_pair_for_comparison(standby_pair, tmp_path):
    run = crash_and_promote(standby_pair, tmp_path, synchronous=False, failover_skip=None, crash=False)
    report("asynchronous standby, no failover", run)
    assert run["repeats"] == 0 and run["errors"] == {}
    assert run["longest_pause"] < 10


def test_synchronous_standby_loses_nothing_even_without_the_fence(standby_pair, tmp_path):
    run = crash_and_promote(standby_pair, tmp_path, synchronous=True, failover_skip=0)
    report("synchronous, fence off", run)
    assert run["repeats"] == 0
    assert set(run["errors"]) <= {"SequenceUnavailable"}
    assert len(run["last_numbers"]) == WORKERS  # every worker went on after the failover by itself
    assert run["longest_pause"] < 30


def test_asynchronous_failover_repeats_numbers_without_the_fence(standby_pair, tmp_path):
    run = crash_and_promote(standby_pair, tmp_path, synchronous=False, failover_skip=0)
    report("asynchronous, 1.5 s behind, fence off", run)
    assert run["repeats"] > 0  # the hole the fence closes, shown on the real thing


def test_asynchronous_failover_repeats_nothing_with_the_fence(standby_pair, tmp_path):
    run = crash_and_promote(standby_pair, tmp_path, synchronous=False, failover_skip=None)  # the default skip
    report("asynchronous, 1.5 s behind, fence on", run)
    assert run["repeats"] == 0
    assert set(run["errors"]) <= {"SequenceUnavailable"}
    assert len(run["last_numbers"]) == WORKERS
    assert run["longest_pause"] < 30


def run_snowflake_failover(standby_pair, tmp_path, *, fenced: bool) -> tuple[int, dict[str, int], bool]:
    """Three processes make Snowflake ids with two worker ids across an asynchronous failover; repeats and errors.

    C holds a worker id from before the standby falls behind; A takes the other one in the stretch the standby
    never receives; B starts after the promotion, finds that worker id free, and takes it while A still makes
    ids with it, until A's next renewal finds its row gone (or A, renewing first, takes it back and B finds
    none free).
    """
    pair = standby_pair(False)
    segment_seq: dict[str, object] = {"SNOWFLAKE_LEASE_SECONDS": SNOWFLAKE_LEASE, "SNOWFLAKE_MAX_WORKERS": 2}
    if not fenced:
        segment_seq["FAILOVER_SKIP"] = 0
    workers = [run_worker("snowflake", pair, tmp_path, segment_seq, 0)]
    try:
        time.sleep(2.0)
        pair.primary.pause_replication()
        workers.append(run_worker("snowflake", pair, tmp_path, segment_seq, 1))
        go = tmp_path / "go"
        workers.append(run_worker("snowflake", pair, tmp_path, segment_seq, 2, go))  # B, ready to start at once
        time.sleep(LAG)
        pair.primary.crash()
        pair.standby.promote()
        go.touch()
        time.sleep(3.0 + (SNOWFLAKE_LEASE if fenced else 0.0))  # fenced, B's first id comes a lease time later
    finally:
        stop_workers(workers, tmp_path)
    runs, _ids, errors, repeats = results(tmp_path, 3)
    # C goes on throughout; A or B, whichever takes the lost worker id on the new primary first, goes on with it
    # (the other finds both worker ids held: WorkerIdsExhausted).
    assert runs[0]["numbers"] and (runs[1]["numbers"] or runs[2]["numbers"]), [run["errors"] for run in runs]
    return repeats, dict(errors), bool(runs[2]["numbers"])


def test_snowflake_ids_repeat_after_an_asynchronous_failover_without_the_fence(standby_pair, tmp_path):
    for attempt in range(3):  # B starts at the promotion; now and then A renews first and B finds no worker id
        (tmp_path / str(attempt)).mkdir()
        repeats, errors, b_made_ids = run_snowflake_failover(standby_pair, tmp_path / str(attempt), fenced=False)
        print(f"\nSnowflake, asynchronous, fence off: {repeats} repeats, errors {errors}")
        if b_made_ids:
            break
    assert repeats > 0


def test_snowflake_ids_do_not_repeat_after_an_asynchronous_failover_with_the_fence(standby_pair, tmp_path):
    repeats, errors, _b_made_ids = run_snowflake_failover(standby_pair, tmp_path, fenced=True)
    print(f"\nSnowflake, asynchronous, fence on: {repeats} repeats, errors {errors}")
    assert repeats == 0
    assert errors.get("WorkerIdFenced", 0) > 0  # B was told when its ids would start, not left hanging
    # A, whose lease the failover lost, finds both worker ids held by C and B once its renewal fails.
    assert set(errors) <= {"WorkerIdFenced", "WorkerIdsExhausted", "SequenceUnavailable", "WorkerLeaseExpired"}
