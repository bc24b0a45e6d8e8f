"""Redis faults under load from several real processes: every number collected, none handed out twice.

Each test runs worker processes for a few seconds through the tier and injects one fault while they
run; workers never fail (Redis errors send them to the table meanwhile). The line each test prints
(run with -s) gives the numbers, the gap (numbers skipped below the highest) and the tier's figures.
"""

from __future__ import annotations

import time

import pytest
from django.conf import settings as django_settings

from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.redis.conftest import tier
from tests.support.redis_servers import Forwarder, RedisServer

# Worker processes under faults: the whole suite runs them on every backend, the core suite leaves them out.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.processes]

WORKERS = 3
SECONDS = 3.0


def report(fault: str, numbers: list[int], figures: dict[str, int]) -> None:
    assert_unique(numbers)
    gap = max(numbers) - len(numbers)
    print(
        f"\n[redis fault] {django_settings.BACKEND} {fault}: {len(numbers)} numbers, repeats 0, gap {gap}, "
        f"refills {figures['redis_refills']}, fenced {figures['redis_fenced']}, "
        f"abandoned {figures['redis_abandoned']}, fallbacks {figures['redis_fallbacks']}"
    )


def run_with(tier_workers, server: RedisServer, redis: dict[str, object], fault, at: float = 0.7):
    """Start the workers, wait until they use the tier (they take a second to start), then `at` s later the fault."""
    tier_workers.start(WORKERS, SECONDS, ["r"], redis)
    in_use(server)
    time.sleep(at)
    fault()
    return tier_workers.wait()


def in_use(server: RedisServer, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not server.client().keys("segseq:*"):
        assert time.monotonic() < deadline, "the workers never used the tier"
        time.sleep(0.02)


def test_plain_use(tier_workers, redis_server):
    numbers, figures = run_with(tier_workers, redis_server, tier(redis_server.url), lambda: None)
    report("none", numbers["r"], figures)
    assert figures["redis_takes"] > 0 and figures["redis_fallbacks"] == 0


def test_kill_without_persistence_and_restart(tier_workers, redis_server):
    numbers, figures = run_with(tier_workers, redis_server, tier(redis_server.url), redis_server.restart)
    report("kill -9, no persistence, restart", numbers["r"], figures)
    assert figures["redis_refills"] >= 2


def test_restart_from_an_older_rdb(tier_workers, redis_server):
    """SAVE, go on handing out, kill -9, restart: the server loads the older state, with the old run_id."""

    def fault() -> None:
        redis_server.client().save()
        time.sleep(0.6)
        redis_server.restart()

    numbers, figures = run_with(tier_workers, redis_server, tier(redis_server.url), fault)
    report("restart from an older RDB", numbers["r"], figures)
    assert figures["redis_fenced"] >= 1  # the old state was found and dropped, never used


def test_flushall(tier_workers, redis_server):
    numbers, figures = run_with(
        tier_workers, redis_server, tier(redis_server.url), lambda: redis_server.client().flushall()
    )
    report("FLUSHALL", numbers["r"], figures)


def test_the_rows_keys_deleted(tier_workers, redis_server):
    def fault() -> None:
        client = redis_server.client()
        client.delete(*client.keys("segseq:*"))

    numbers, figures = run_with(tier_workers, redis_server, tier(redis_server.url), fault)
    report("the row's keys deleted", numbers["r"], figures)


def test_redis_stopped_for_good_falls_back_to_the_table(tier_workers, redis_server):
    numbers, figures = run_with(tier_workers, redis_server, tier(redis_server.url), redis_server.kill)
    report("Redis stopped for good (FALLBACK)", numbers["r"], figures)
    assert figures["redis_fallbacks"] >= WORKERS
    assert Sequence.objects.get(name="r").value >= max(numbers["r"])


def test_daily_rows_across_a_kill(tier_workers, redis_server):
    """Four-digit daily rows with super-segments of 50: a kill costs at most a few of the day's numbers."""
    for day in ("day@20261126", "day@20261127"):
        Sequence.objects.create(name=day, step=5, max_value=9999)
    tier_workers.start(WORKERS, 2.0, ["day@20261126"], tier(redis_server.url), pause=0.001)
    in_use(redis_server)
    time.sleep(0.3)
    redis_server.restart()
    first, figures = tier_workers.wait()
    report("daily row, kill -9 mid-day", first["day@20261126"], figures)
    assert max(first["day@20261126"]) <= 9999
    tier_workers.procs.clear()
    tier_workers.start(1, 0.3, ["day@20261127"], tier(redis_server.url))
    second, _ = tier_workers.wait()
    assert min(second["day@20261127"]) == 1  # the next day starts at 1


def test_a_replica_that_stopped_following_promoted(tier_workers, servers, tmp_path):
    """The replica stops following (its master unreachable to it), the master goes on and dies, the replica
    is promoted behind the same address: it holds the master's older states, with the master's run_id."""
    master = RedisServer(tmp_path / "master", "--repl-diskless-sync-delay", "0").start()
    replica = RedisServer(tmp_path / "replica").start("--replicaof", "127.0.0.1", str(master.port))
    servers += [master, replica]
    deadline = time.monotonic() + 20
    while replica.client().info("replication")["master_link_status"] != "up":
        assert time.monotonic() < deadline, "the replica never synced"
        time.sleep(0.05)
    address = Forwarder(master.port)

    def fault() -> None:
        replica.client().execute_command("REPLICAOF", "127.0.0.1", str(replica.port + 1))  # follows nobody now
        time.sleep(0.6)
        master.kill()
        replica.client().execute_command("REPLICAOF", "NO", "ONE")
        address.switch(replica.port)

    try:
        numbers, figures = run_with(tier_workers, master, tier(f"redis://127.0.0.1:{address.port}/0"), fault)
    finally:
        address.close()
    report("replica that stopped following promoted", numbers["r"], figures)
    assert figures["redis_fenced"] >= 1
