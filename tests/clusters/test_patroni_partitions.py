"""A Patroni leader partitioned, not killed, in network namespaces: cut off (silence) from etcd, from its replica and
from half the application processes, while the other half still reaches it and only it.

Patroni (synchronous_mode, ttl 20) on the old leader cannot renew its lease and demotes itself; the replica, the
synchronous standby, takes the lease once it runs out and is promoted; the half that reaches it moves there. What
is measured: repeats across both sides (plain, per-period and gapless rows), how long and how much the old leader
went on handing out after the cut, each side's longest call, and the times to the demotion and the promotion. The
run proves its fault first: the old leader alive and writable right after the cut, then demoted while the replica
was promoted.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.support import patroni
from tests.support.partition_patroni import PG_PORT, NamespacedPatroni
from tests.support.partition_runs import errors_of, finish, numbers_of, repeats_in, run_to_end, start_worker, wait_ready
from tests.support.partition_worker import ROWS

DATABASE = "segseq_partition"
WORKERS_PER_SIDE = 2
HEALTHY = 2.0
AFTER_PROMOTION = 3.0
ROW_VALUES = "SELECT name, value FROM django_segment_seq_sequence"
ALLOWED_ERRORS = {"cached:SequenceUnavailable", "gapless:SequenceUnavailable", "gapless:OperationalError"}
# The longest call of any process: a commit on the old leader waits for its synchronous standby until Patroni
# demotes it (retry_timeout, then a restart), then the retries of a connection that finds no writable server.
LONGEST_CALL = patroni.TTL + 10.0


def test_a_leader_cut_off_from_etcd_and_its_replica_demotes_itself(network, folder):
    problem = patroni.missing_programs()  # its own namespaces: the loopback ports of test_patroni.py's cluster are free
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI runs the Patroni partition test and cannot here: {problem}")
        pytest.skip(problem)
    etcd, *members = network.node("etcd"), network.node("member1"), network.node("member2")
    old_side, new_side = network.node("apps-old"), network.node("apps-new")
    cluster = NamespacedPatroni(etcd, members, folder)
    try:
        cluster.start()
        leader = cluster.leader()
        replica = next(member for member in cluster.members if member is not leader)
        leader.execute(f"CREATE DATABASE {DATABASE}")
        target = ("postgresql", ",".join(m.address for m in members), f"{PG_PORT},{PG_PORT}", DATABASE)
        run_to_end(start_worker(old_side, folder, -1, "migrate", target, {}), "the migration")
        settings = {"PREFETCH": False, "ADAPTIVE_STEP": False}
        sides = [old_side] * WORKERS_PER_SIDE + [new_side] * WORKERS_PER_SIDE
        workers = [start_worker(n, folder, i, "take", target, settings, ("promoted",)) for i, n in enumerate(sides)]
        try:
            wait_ready(workers, folder)
            (folder / "go").touch()
            time.sleep(HEALTHY)
            cut_at = time.monotonic()
            for peer in (etcd, replica.node, new_side):
                network.cut(leader.node, peer)
            network.cut(old_side, replica.node)
            alive_after_cut = leader.role() == "primary"
            rows, moved_at = leader_rows(leader), cut_at
            demoted_at = promoted_at = None
            standby_rows: dict[str, int] = {}
            while demoted_at is None or promoted_at is None:
                if time.monotonic() - cut_at > 3 * patroni.TTL:
                    pytest.fail(f"no demotion and promotion in {3 * patroni.TTL} s: {cluster.members}")
                if demoted_at is None:
                    now_rows = leader_rows(leader)
                    if now_rows is None:
                        demoted_at = time.monotonic()
                    elif now_rows != rows:
                        rows, moved_at = now_rows, time.monotonic()
                if promoted_at is None and replica.role() == "primary":
                    standby_rows = leader_rows(replica) or {}  # what the new leader starts from
                    promoted_at = time.monotonic()
                    (folder / "promoted").touch()
                time.sleep(0.1)
            time.sleep(AFTER_PROMOTION)
        finally:
            runs = finish(workers, folder)
    finally:
        cluster.stop()
    numbers = numbers_of(runs)
    errors = errors_of(runs)
    old, new = runs[:WORKERS_PER_SIDE], runs[WORKERS_PER_SIDE:]
    new_after = sum(sum(run["after_mark"].values()) for run in new)
    longest = {side: max(run["longest_call"] for run in group) for side, group in (("old", old), ("new", new))}
    past = {row: (rows or {}).get(row, 0) - standby_rows.get(row, 0) for row in ROWS}
    print(
        f"\nPatroni leader partitioned: {sum(map(len, numbers.values()))} numbers, repeats "
        f"{[repeats_in(got) for got in numbers.values()]}; old leader demoted {demoted_at - cut_at:.1f} s after the "
        f"cut, replica promoted after {promoted_at - cut_at:.1f} s; the old leader's rows last moved "
        f"{moved_at - cut_at:.2f} s after the cut, its last values past what the new leader started from {past}; "
        f"new side {new_after} numbers after the promotion; errors {errors}; longest call {longest}; "
        f"{[m for run in runs for m in run['messages']][:3]}"
    )
    assert alive_after_cut, "the leader was not taking writes after the cut"
    assert all(repeats_in(got) == 0 for got in numbers.values())
    assert set(errors) <= ALLOWED_ERRORS, [run["messages"] for run in runs]
    assert new_after > 0, "the processes that reach the replica took no number after its promotion"
    assert max(longest.values()) < LONGEST_CALL


def leader_rows(member) -> dict[str, int] | None:
    """The Sequence rows as `member` has them; None once it no longer takes writes (demoted, or restarting)."""
    try:
        if member.execute("SELECT pg_is_in_recovery()") != [(False,)]:
            return None
        return {name: int(value) for name, value in member.execute(ROW_VALUES, DATABASE)}
    except Exception:  # noqa: BLE001 - stopped or restarting by Patroni's demotion
        return None
