"""The Redis tier through a partition, in network namespaces: a Sentinel master cut off from its Sentinel and its
replica while some application processes still reach it (and only it), the replica promoted while the old master
still takes writes, both sides taking numbers, then the partition healed and the old master made a replica of the
new one; and a Redis Cluster master cut off on the minority side with the processes that reach only it, its
replica promoted on the majority side, then the partition healed. Every number is checked for repeats, and every
process must end within a bound of its run.

The processes reach the suite's database through its Unix socket (the namespaces have no other way out); the
Redis servers and the Sentinel each live in a namespace of their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from django.conf import settings as django_settings
from django.db import connection
from redis.crc import key_slot

from django_segment_seq.redistier.config import tier_config
from django_segment_seq.redistier.source import state_keys
from tests.conftest import ROOT, worker_env
from tests.redis.conftest import tier
from tests.support.partition_redis import NamespacedRedis, NamespacedSentinel, start_cluster
from tests.support.partition_runs import repeats_in

# Worker processes under faults, which the core suite leaves out. They pass on every backend; a whole run makes
# them once, in the MariaDB job (the PostgreSQL job carries the PostgreSQL and Patroni partitions), unless
# SEGMENT_SEQ_ALL_CLUSTERS asks for them everywhere.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.processes,
    pytest.mark.skipif(
        django_settings.BACKEND != "mariadb" and not os.environ.get("SEGMENT_SEQ_ALL_CLUSTERS"),
        reason="runs once, in the mariadb job",
    ),
]

WORKERS_PER_SIDE = 2
SECONDS = 16.0
# A worker runs SECONDS once set up (some seconds on a loaded machine), then writes what it got: a call held longer
# than this past its end is a wait without bound.
GRACE = 25.0


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
    repeats = repeats_in(got)
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


def test_a_cluster_master_cut_off_on_the_minority_side(network, tier_workers, tmp_path, settings):
    nodes = [network.node(f"redis{index}") for index in range(1, 7)]
    old_side, new_side = network.node("apps-old"), network.node("apps-new")
    servers = start_cluster(nodes, tmp_path)
    try:
        settings.SEGMENT_SEQ = {**django_settings.SEGMENT_SEQ, "REDIS": tier(servers[0].url, CLUSTER=True)}
        config = tier_config()
        assert config is not None
        key = state_keys(config, "default", "r")[0]
        owner, replica = master_and_replica(servers, key_slot(key.encode()))
        others = [server for server in servers if server is not owner]
        socket = database_socket()
        started = time.monotonic()
        start_side(tier_workers, old_side, tier(owner.url, CLUSTER=True), socket)
        start_side(tier_workers, new_side, tier(replica.url, CLUSTER=True), socket)
        wait_for(lambda: bool(owner.client().exists(key)), "the workers using the tier")
        time.sleep(1.0)
        cut_at = time.monotonic()
        for peer in [server.node for server in others] + [new_side]:
            network.cut(owner.node, peer)
        for server in others:
            network.cut(old_side, server.node)
        promoted = wait_for(lambda: replica.role() == "master", "the replica's promotion", 30)
        minority = str(owner.client().cluster("info")["cluster_state"])
        time.sleep(2.0)
        for peer in [server.node for server in others] + [new_side]:
            network.heal(owner.node, peer)
        for server in others:
            network.heal(old_side, server.node)
        rejoined = wait_for(lambda: owner.role() == "slave", "the old master made a replica", 40)
        numbers, figures = tier_workers.wait(timeout=SECONDS + GRACE + 30)
        elapsed = time.monotonic() - started
    finally:
        for server in servers:
            server.kill()
    got = numbers.get("r", [])
    repeats = repeats_in(got)
    print(
        f"\n[redis partition] Cluster master cut off on the minority side {time.monotonic() - cut_at:.0f} s before "
        f"the end: {len(got)} numbers, {repeats} repeats, its replica promoted {promoted:.1f} s after the cut (the "
        f"old master's cluster state then: {minority}), the old master a replica {rejoined:.1f} s after the heal, "
        f"the workers done in {elapsed:.1f} s of {SECONDS:.0f}; refills {figures['redis_refills']}, fenced "
        f"{figures['redis_fenced']}, abandoned {figures['redis_abandoned']}, fallbacks {figures['redis_fallbacks']}"
    )
    assert minority == "fail", "the old master did not find itself on the minority side"
    assert repeats == 0
    assert elapsed < SECONDS + GRACE, "a call waited without bound"


def master_and_replica(servers: list[NamespacedRedis], slot: int) -> tuple[NamespacedRedis, NamespacedRedis]:
    """The master serving `slot` and its replica, as the cluster's own table says."""
    lines = [line.split() for line in servers[0].client().execute_command("CLUSTER", "NODES").decode().splitlines()]
    by_address = {f"{server.node.address}:6379": server for server in servers}
    owner_id = next(
        fields[0]
        for fields in lines
        for ranges in fields[8:]
        if ranges[0].isdigit()
        and int(ranges.partition("-")[0]) <= slot <= int(ranges.partition("-")[2] or ranges.partition("-")[0])
    )
    address_of = {fields[0]: fields[1].split("@")[0] for fields in lines}
    replica_id = next(fields[0] for fields in lines if fields[3] == owner_id)
    return by_address[address_of[owner_id]], by_address[address_of[replica_id]]
