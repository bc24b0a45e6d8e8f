"""The Redis tier through a partition, in network namespaces: a Sentinel master cut off from its Sentinel and its
replica while some application processes still reach it (and only it), the replica promoted while the old master
still takes writes, both sides taking numbers, then the partition healed and the old master made a replica of the
new one. Every number is checked for repeats, and every process must end within a bound of its run.

The processes reach the suite's database through its Unix socket (the namespaces have no other way out); the
Redis servers and the Sentinel each live in a namespace of their own.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import time

import pytest
from django.db import connection

from tests.conftest import ROOT, worker_env
from tests.redis.conftest import tier
from tests.support.partition_redis import NamespacedRedis, NamespacedSentinel

# Worker processes under faults: the whole suite runs them on every backend, the core suite leaves them out.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]

WORKERS_PER_SIDE = 2
SECONDS = 16.0
# A worker runs SECONDS and then writes what it got: a call held longer than this past its end is a wait unbounded.
GRACE = 15.0


def database_socket() -> str:
    """Where the suite's database server listens on a Unix socket ("" for SQLite, a file the namespaces share)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW unix_socket_directories")
            return str(cursor.fetchone()[0]).split(",")[0].strip()
        if connection.vendor == "mysql":
            cursor.execute("SELECT @@socket")
            return str(cursor.fetchone()[0])
    return ""


def start_side(tier_workers, node, redis: dict[str, object], socket: str) -> None:
    """WORKERS_PER_SIDE tier workers (tests/redis/worker.py) in `node`'s namespace, added to `tier_workers`."""
    extra = {"SEGMENT_SEQ_TEST_DB_SOCKET": socket} if socket else {}
    env = worker_env(SEGMENT_SEQ_TEST_PREFETCH="1", SEGMENT_SEQ_TEST_SETTINGS=json.dumps({"REDIS": redis}), **extra)
    for _ in range(WORKERS_PER_SIDE):
        out = tier_workers.tmp_path / f"tier{len(tier_workers.procs)}.txt"
        command = node.command([sys.executable, "-m", "tests.redis.worker", str(out), str(SECONDS), "r"])
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        tier_workers.procs.append((proc, out))


def wait_for(condition, what: str, timeout: float = 30) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"{what} did not happen within {timeout} s"
        time.sleep(0.05)
    return time.monotonic() - started


def test_a_sentinel_master_cut_off_while_some_processes_still_reach_it(network, tier_workers, tmp_path):
    master_node, replica_node, sentinel_node = network.node("master"), network.node("replica"), network.node("sentinel")
    old_side, new_side = network.node("apps-old"), network.node("apps-new")
    master = NamespacedRedis(master_node, tmp_path / "master", "--repl-diskless-sync-delay", "0")
    replica = NamespacedRedis(replica_node, tmp_path / "replica", "--replicaof", master_node.address, "6379")
    sentinel = NamespacedSentinel(sentinel_node, tmp_path, master)
    try:
        wait_for(lambda: replica.client().info("replication")["master_link_status"] == "up", "the replica's sync")
        wait_for(lambda: "ip" in sentinel.ask("SENTINEL", "replicas", "seg"), "the Sentinel finding the replica")
        socket = database_socket()
        started = time.monotonic()
        # The old side knows the master by its address (a setting, a stale name); the new side asks the Sentinel.
        start_side(tier_workers, old_side, tier(master.url), socket)
        start_side(tier_workers, new_side, tier(SENTINELS=[[sentinel_node.address, 26379]], SERVICE="seg"), socket)
        wait_for(lambda: bool(master.client().keys("segseq:*")), "the workers using the tier")
        time.sleep(1.0)
        cut_at = time.monotonic()
        for peer in (replica_node, sentinel_node, new_side):
            network.cut(master_node, peer)
        for peer in (replica_node, sentinel_node):
            network.cut(old_side, peer)
        promoted = wait_for(lambda: sentinel.master_address() == replica_node.address, "the promotion", 20)
        split = master.role() == "master" and replica.role() == "master"
        time.sleep(3.0)  # both sides take numbers, each from its own master
        for peer in (replica_node, sentinel_node, new_side):
            network.heal(master_node, peer)
        for peer in (replica_node, sentinel_node):
            network.heal(old_side, peer)
        rejoined = wait_for(lambda: master.role() == "slave", "the old master made a replica", 30)
        numbers, figures = tier_workers.wait(timeout=SECONDS + GRACE + 30)
        elapsed = time.monotonic() - started
    finally:
        sentinel.kill()
        master.kill()
        replica.kill()
    got = numbers.get("r", [])
    repeats = sum(times - 1 for times in collections.Counter(got).values() if times > 1)
    print(
        f"\n[redis partition] Sentinel master cut off {time.monotonic() - cut_at:.0f} s before the end: "
        f"{len(got)} numbers, {repeats} repeats, promoted {promoted:.1f} s after the cut (both masters at once: "
        f"{split}), the old master a replica {rejoined:.1f} s after the heal, the workers done in {elapsed:.1f} s "
        f"of {SECONDS:.0f}; refills {figures['redis_refills']}, fenced {figures['redis_fenced']}, "
        f"abandoned {figures['redis_abandoned']}, fallbacks {figures['redis_fallbacks']}"
    )
    assert split, "the replica was promoted while the old master still took writes"
    assert repeats == 0
    assert elapsed < SECONDS + GRACE, "a call waited without bound"
