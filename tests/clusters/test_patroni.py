"""A Patroni leader crash under load: its postgres and its Patroni are SIGKILLed while processes take numbers
through libpq's multi-host connection, and Patroni promotes the synchronous standby once the leader's lease
runs out (ttl 20 s).

Callers must see no repeat, a bounded wait per call, SequenceUnavailable and nothing else meanwhile, and
numbers again by themselves once the new leader takes writes, all above every number handed out before.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.clusters.patroni_fixtures import DATABASE
from tests.conftest import ROOT, assert_unique
from tests.support.partition_runs import wait_ready
from tests.support.patroni import TTL, PatroniCluster

WORKERS = 4
# Seconds of numbers before the crash (the rate measured), and after the new leader takes writes.
BEFORE, AFTER = 3.0, 2.0
# A call may wait through CONNECTION_RETRIES back-offs and connection attempts, never through the whole failover.
LONGEST_CALL = 10.0
# Fixed ranges of 10: every worker goes back to the table many times a second, so the crash hits allocations.
SEGMENT_SEQ = {"PREFETCH": False, "ADAPTIVE_STEP": False}


def start_worker(cluster: PatroniCluster, tmp_path: Path, index: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.patroni_worker", cluster.hosts, cluster.ports, DATABASE,
         str(tmp_path / f"worker{index}.json"), str(tmp_path / "stop"), json.dumps(SEGMENT_SEQ)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def run_through(
    cluster: PatroniCluster, tmp_path: Path, crash: Callable[[], float]
) -> tuple[list[dict[str, Any]], float, float, float]:
    """Workers at full speed for BEFORE seconds once each has a number, then `crash()`, which returns once what it
    waits for is seen, with the instant it came no earlier than; then AFTER seconds more. Their runs, the crash
    instant, how long `crash()` took and the instant it returned."""
    cluster.ensure_healthy()
    cluster.execute("DELETE FROM django_segment_seq_sequence WHERE name = 'failover'", DATABASE)
    cluster.execute(
        "INSERT INTO django_segment_seq_sequence (name, value, step, min_value, max_value, cycle, version, "
        "history, created, modified) "
        "VALUES ('failover', 0, 10, 1, 9223372036854775806, false, 0, '', now(), now())",
        DATABASE,
    )
    workers = [start_worker(cluster, tmp_path, index) for index in range(WORKERS)]
    try:
        wait_ready(workers, tmp_path)  # each has its first number: on a busy machine a start may outlast BEFORE
        time.sleep(BEFORE)
        crashed = time.monotonic()
        not_before = crash()
        recovered = time.monotonic() - crashed
        time.sleep(AFTER)
    finally:
        (tmp_path / "stop").touch()
        failed = []
        for worker in workers:
            try:
                _, err = worker.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.communicate()
                failed.append("a worker hung")
                continue
            if worker.returncode != 0:
                failed.append(err[-3000:])
        assert not failed, "\n".join(failed)
    runs = [json.loads((tmp_path / f"worker{index}.json").read_text()) for index in range(WORKERS)]
    return runs, crashed, recovered, not_before


def errors_and_causes(runs: list[dict[str, Any]]) -> tuple[dict[str, int], dict[str, int]]:
    errors: collections.Counter[str] = collections.Counter()
    causes: collections.Counter[str] = collections.Counter()
    for run in runs:
        errors.update(run["errors"])
        causes.update(run["causes"])
    return dict(errors), dict(causes)


def test_a_standby_crash_holds_writers_only_until_patroni_drops_it(patroni_cluster, tmp_path):
    """With the synchronous standby gone, a commit waits for it until Patroni empties synchronous_standby_names."""
    cluster = patroni_cluster

    def crash_the_standby() -> float:
        standby = next(member for member in cluster.members if member is not cluster.leader())
        cluster.crash(standby)
        return cluster.wait(
            lambda: cluster.execute("SHOW synchronous_standby_names") == [("",)],
            "the leader's Patroni to stop waiting for the crashed standby",
            timeout=TTL * 3,
        )

    runs, crashed, dropped, _ = run_through(cluster, tmp_path, crash_the_standby)
    every = assert_unique(n for run in runs for n in run["numbers"])
    errors, causes = errors_and_causes(runs)
    assert set(errors) <= {"SequenceUnavailable"}, f"callers saw other errors: {errors}"
    longest_call = max(run["longest_call"] for run in runs)
    longest_pause = max(max((b - a for a, b, _ in run["gaps"]), default=0.0) for run in runs)
    assert all(run["last"] > crashed + dropped for run in runs), "a worker took no number after the crash"
    print(
        f"\nPatroni standby crash: {len(every)} numbers, 0 repeats, synchronous standby dropped {dropped:.1f} s "
        f"after the crash, longest pause {longest_pause:.2f} s, longest call {longest_call:.2f} s, errors {errors} "
        f"(causes {causes})"
    )
    assert longest_call < LONGEST_CALL


def test_a_leader_crash_repeats_nothing_and_callers_go_on_by_themselves(patroni_cluster, tmp_path):
    cluster = patroni_cluster

    def crash_the_leader() -> float:
        leader = cluster.leader()
        (survivor,) = (member for member in cluster.members if member is not leader)
        cluster.crash(leader)
        not_before = cluster.wait(survivor.takes_writes, "the synchronous standby's promotion", timeout=TTL * 3)
        cluster.wait(survivor.is_writable_leader, "Patroni to report the promotion", timeout=TTL)
        return not_before

    runs, crashed, promotion, promoted_after = run_through(cluster, tmp_path, crash_the_leader)
    every = assert_unique(n for run in runs for n in run["numbers"])
    errors, causes = errors_and_causes(runs)
    assert set(errors) <= {"SequenceUnavailable"}, f"callers saw other errors: {errors}"
    longest_call = max(run["longest_call"] for run in runs)
    assert longest_call < LONGEST_CALL

    # Each worker's failover is its longest pause: it begins once the numbers it held in memory ran out, after
    # the crash, and ends after the promotion, which came after the last check that found the standby in recovery
    # began (the check that saw it promoted may end much later on a loaded machine).
    assert all(run["gaps"] for run in runs), "a worker never paused: it took no number after the crash"
    outages = [max(run["gaps"], key=lambda gap: gap[1] - gap[0]) for run in runs]
    for t_before, t_after, _ in outages:
        assert t_before < promoted_after < t_after, (
            f"a worker's longest pause ran from {t_before - crashed:.1f} to {t_after - crashed:.1f} s after the "
            f"crash; the standby was still in recovery {promoted_after - crashed:.1f} s after it"
        )
    before = [n for run, (_, _, cut) in zip(runs, outages, strict=True) for n in run["numbers"][:cut]]
    after = [n for run, (_, _, cut) in zip(runs, outages, strict=True) for n in run["numbers"][cut:]]
    assert min(after) > max(before)
    per_second = len(before) / (crashed - min(run["first"] for run in runs))
    resumed = min(t_after for _, t_after, _ in outages)
    per_second_after = len(after) / (max(run["last"] for run in runs) - resumed)
    pause = resumed - max(t_before for t_before, _, _ in outages)
    print(
        f"\nPatroni leader crash: {len(every)} numbers, 0 repeats, {per_second:,.0f} numbers/s before the crash, "
        f"promotion {promoted_after - crashed:.1f} to {promotion:.1f} s after the crash, "
        f"pause {pause:.1f} s (last number before to first after), longest call {longest_call:.2f} s, "
        f"errors {errors} (causes {causes}), {len(after)} numbers after, from {min(after)} "
        f"({per_second_after:,.0f}/s, one member: no synchronous standby)"
    )
    assert pause < promotion + AFTER
