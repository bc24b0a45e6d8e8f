"""Sentinel failover and a Redis Cluster slot moved, under load from real processes: no repeats.

Both hand the row's state to another server process: a promoted replica that holds the old master's
states, a node that receives the slot's keys with the old node's run_id. The fence drops them.
"""

from __future__ import annotations

import time

import pytest
from django.conf import settings as django_settings
from redis import Redis
from redis.crc import key_slot

from django_segment_seq.redistier.config import tier_config
from django_segment_seq.redistier.source import state_keys
from tests.redis.conftest import tier
from tests.redis.test_faults import WORKERS, report
from tests.support.redis_servers import RedisServer, Sentinel, start_cluster

# Worker processes under faults: the whole suite runs them on every backend, the core suite leaves them out.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]


def wait_for(condition, what: str, timeout: float = 30) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"{what} did not happen within {timeout} s"
        time.sleep(0.02)
    return time.monotonic() - started


def test_sentinel_failover_under_load(tier_workers, servers, tmp_path):
    master = RedisServer(tmp_path / "master", "--repl-diskless-sync-delay", "0").start()
    replica = RedisServer(tmp_path / "replica").start("--replicaof", "127.0.0.1", str(master.port))
    servers += [master, replica]
    wait_for(lambda: replica.client().info("replication")["master_link_status"] == "up", "the replica's sync")
    sentinel = Sentinel(tmp_path, master)
    try:
        wait_for(lambda: sentinel_knows_replica(sentinel), "the Sentinel finding the replica")
        redis = tier(SENTINELS=[["127.0.0.1", sentinel.port]], SERVICE="seg")
        tier_workers.start(WORKERS, 7.0, ["r"], redis)
        wait_for(lambda: bool(master.client().keys("segseq:*")), "the workers using the tier")
        time.sleep(0.7)
        master.kill()
        pause = wait_for(lambda: sentinel.master_port() == replica.port, "the failover", timeout=20)
        numbers, figures = tier_workers.wait()
    finally:
        sentinel.kill()
    report(f"Sentinel failover (promoted {pause:.1f} s after the kill)", numbers["r"], figures)
    assert figures["redis_fenced"] >= 1
    assert replica.client().keys("segseq:*")  # the tier went on on the promoted replica


def sentinel_knows_replica(sentinel: Sentinel) -> bool:
    return bool(Redis(port=sentinel.port).execute_command("SENTINEL", "replicas", "seg"))


def test_cluster_slot_moved_under_load(tier_workers, servers, tmp_path, settings):
    nodes = start_cluster(tmp_path)
    servers += nodes
    redis = tier(nodes[0].url, CLUSTER=True)
    settings.SEGMENT_SEQ = {**django_settings.SEGMENT_SEQ, "REDIS": redis}
    config = tier_config()
    assert config is not None
    key = state_keys(config, "default", "r")[0]
    slot = key_slot(key.encode())
    ids = {node.port: node.client().cluster("myid").decode() for node in nodes}
    source = next(node for node in nodes if node.port == owner_port(nodes[0], slot))
    target = next(node for node in nodes if node is not source)
    tier_workers.start(WORKERS, 4.0, ["r"], redis)
    wait_for(lambda: source.client().exists(key), "the workers using the tier")
    time.sleep(0.7)
    target.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source.port])
    source.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[target.port])
    keys = source.client().execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
    if keys:
        source.client().execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys)
    for node in nodes:
        node.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[target.port])
    numbers, figures = tier_workers.wait()
    report("Cluster slot moved", numbers["r"], figures)
    assert figures["redis_fenced"] >= 1
    assert target.client().exists(key)


def owner_port(node: RedisServer, slot: int) -> int:
    """The port of the node serving `slot`, as `node` sees the cluster."""
    for line in node.client().execute_command("CLUSTER", "NODES").decode().splitlines():
        fields = line.split()
        for ranges in fields[8:]:
            first, _, last = ranges.partition("-")
            if first.isdigit() and int(first) <= slot <= int(last or first):
                return int(fields[1].split(":")[1].split("@")[0])
    raise AssertionError(f"no node serves slot {slot}")
