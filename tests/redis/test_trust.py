"""Facts the fence must not take on trust: a client library's own re-sends, a failback, two deployments that
look alike, a restore while Redis keeps what the table had lent it. Every number taken is checked for repeats."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connections

from django_segment_seq import models as app_models
from django_segment_seq import next_value, next_values
from django_segment_seq.allocator.request import BlockRequest
from django_segment_seq.api import clear_cache
from django_segment_seq.cache.sources import tiered
from django_segment_seq.models import Sequence
from django_segment_seq.redistier import clients
from django_segment_seq.redistier.config import tier_config
from django_segment_seq.redistier.source import state_keys
from tests.conftest import assert_unique
from tests.redis.conftest import tier
from tests.support.redis_servers import Forwarder, RedisServer, start_cluster

allocate = tiered.allocate  # the cache's source: Redis for rows on the tier, else the table

pytestmark = pytest.mark.django_db(transaction=True)


def use_tier(settings, location: str | None = None, **extra: object) -> dict[str, object]:
    redis = tier(location, **extra)
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": redis}
    return redis


def key_of(name: str) -> str:
    config = tier_config()
    assert config is not None
    return state_keys(config, "default", name)[0]


def take(name: str, count: int) -> list[int]:
    return [next_value(name) for _ in range(count)]


def test_a_cluster_node_that_stalls_runs_a_script_once(settings, servers, tmp_path):
    """redis-py 5.x's RedisCluster re-sent a command that met a timeout (cluster_error_retry_attempts, 3): a
    script sent while its node was stopped for 0.8 s ran twice there. The tier's client sends it once. Then the
    cluster unreachable: RedisClusterException, which is not a RedisError, sends the callers to the table too."""
    nodes = start_cluster(tmp_path)
    servers += nodes
    use_tier(settings, nodes[0].url, CLUSTER=True)
    client = clients.make_client(tier_config().raw)  # type: ignore[union-attr]
    count = client.register_script("return redis.call('INCR', KEYS[1])")
    key = "{probe}count"
    count(keys=[key])  # the script loaded on the node (NOSCRIPT would keep it from running at all)
    client.delete(key)
    port = int(client.get_node_from_key(key).port)
    owner = next(node for node in nodes if node.port == port)
    assert owner.proc is not None
    os.kill(owner.proc.pid, signal.SIGSTOP)
    threading.Timer(0.8, os.kill, (owner.proc.pid, signal.SIGCONT)).start()
    started = time.monotonic()
    try:
        outcome = f"returned {count(keys=[key])}"
    except Exception as exc:  # noqa: BLE001 - whichever of redis-py's errors: a lost reply must not be re-sent
        outcome = f"raised {type(exc).__name__}"
    waited = time.monotonic() - started
    time.sleep(max(0.0, 1.0 - waited))  # the node runs what it had received once it resumes
    runs = int(owner.client().get(key) or 0)
    print(f"\n[cluster stall] {outcome} after {waited:.2f} s; the script ran {runs} time(s)")
    assert runs == 1
    numbers = take("r-cluster", 15)
    for node in nodes:
        node.kill()
    clients.forget()  # as a process started now: its client meets no node
    clear_cache()
    numbers += take("r-cluster", 15)
    assert_unique(numbers)


def test_an_install_sent_twice_is_never_handed_out(settings, redis_server):
    """An INSTALL that Redis ran twice (a client that re-sends) finds its own super-segment there: its caller
    must take a block of it from Redis like everyone else, not the whole reservation."""
    use_tier(settings, redis_server.url)
    tier = clients.tier(tier_config().raw)  # type: ignore[union-attr]
    once = tier.install

    def twice(**kwargs: object) -> object:
        once(**kwargs)
        return once(**kwargs)

    tier.install = twice
    blocks = [allocate(BlockRequest("default", "r-twice", 1)).block for _ in range(5)]
    numbers = [number for block in blocks for number in range(block.first, block.last + 1)]
    print(f"\n[install sent twice] blocks {[(b.first, b.last) for b in blocks]}")
    assert_unique(numbers)


def test_a_failback_brings_an_older_state_back_under_the_servers_own_run_id(settings, servers, tmp_path):
    """M1 installs rY's state; R stops following; rY goes on on M1; R is promoted; M1 comes back as R's replica
    (its copy of rY is R's older one, still under M1's run_id) and is made master again."""
    m1 = RedisServer(tmp_path / "m1", "--repl-diskless-sync-delay", "0").start()
    r = RedisServer(tmp_path / "r", "--repl-diskless-sync-delay", "0").start()
    servers += [m1, r]
    follow(r, m1)
    address = Forwarder(m1.port)
    try:
        use_tier(settings, f"redis://127.0.0.1:{address.port}/0")
        rows = {"rY": take("rY", 40), "rA": take("rA", 40)}
        wait_for(lambda: r.client().hgetall(key_of("rY")) == m1.client().hgetall(key_of("rY")), "R in sync")
        r.client().execute_command("REPLICAOF", "127.0.0.1", str(r.port + 1))  # R follows nobody now
        rows["rY"] += take("rY", 300)  # on M1 only
        promote(r, address)  # M1 is left alone, as if stopped
        rows["rA"] += on_redis(r, "rA", 40)
        follow(m1, r)  # M1 resumes as R's replica: a full sync gives it R's copy of rY
        promote(m1, address)
        r.client().execute_command("REPLICAOF", "127.0.0.1", str(m1.port))
        rows["rY"] += on_redis(m1, "rY", 300)
    finally:
        address.close()
    repeats = len(rows["rY"]) - len(set(rows["rY"]))
    print(f"\n[failback] rY: {len(rows['rY'])} numbers, {repeats} repeats")
    for numbers in rows.values():
        assert_unique(numbers)


def follow(replica: RedisServer, master: RedisServer) -> None:
    replica.client().execute_command("REPLICAOF", "127.0.0.1", str(master.port))
    wait_for(lambda: replica.client().info("replication")["master_link_status"] == "up", "the replica's sync")


def promote(server: RedisServer, address: Forwarder) -> None:
    server.client().execute_command("REPLICAOF", "NO", "ONE")
    address.switch(server.port)
    clear_cache()  # the other processes' cached blocks: this process goes on as a new one would


def on_redis(server: RedisServer, name: str, count: int) -> list[int]:
    """`count` numbers of row `name` once Redis serves it again (the first calls after a switch meet a cut
    connection, and the table serves for RETRY_AFTER)."""
    taken: list[int] = []
    deadline = time.monotonic() + 10
    while not server.client().exists(key_of(name)) or len(taken) < count:
        assert time.monotonic() < deadline, "Redis never served the row again"
        taken.append(next_value(name))
        time.sleep(0.002)
    return taken


def wait_for(condition, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.02)


def wipe_deployment() -> None:
    """What another deployment's database holds at first: no rows (the same file path, another file)."""
    Sequence.objects.all().delete()
    deployment = getattr(app_models, "Deployment", None)
    if deployment is not None:
        deployment.objects.all().delete()
    clear_cache()


def test_two_deployments_that_look_alike_keep_their_own_super_segments(settings, redis_server):
    """Two deployments whose databases the server names alike (SQLite files at one path in two containers, two
    MariaDB pods named mariadb-0, ...), one Redis, one KEY_PREFIX; then a FLUSHALL (a gap, documented)."""
    use_tier(settings, redis_server.url)
    a_before = take("r1", 30)
    wipe_deployment()  # deployment B's own, empty database at the same place
    b_numbers = take("r1", 30)
    redis_server.client().flushall()
    clear_cache()
    b_numbers += take("r1", 70)
    repeats = len(b_numbers) - len(set(b_numbers))
    print(f"\n[look-alike deployments] A {a_before[0]}..{a_before[-1]}, B: {len(b_numbers)} numbers, {repeats} repeats")
    assert_unique(b_numbers)


def test_a_database_copied_to_another_server_mints_a_new_identity(settings, redis_server, caplog):
    """The stored identity's origin names another server: this database is a copy, its keys must be its own."""
    from django_segment_seq.redistier import deployment_id

    use_tier(settings, redis_server.url)
    take("r2", 5)
    first = deployment_id.deployment("default")
    app_models.Deployment.objects.update(origin="0" * 16)  # as if minted on the server it was copied from
    clear_cache()
    assert deployment_id.deployment("default") != first
    assert "this database is a copy" in caplog.text
    call_command("segment_seq", "redis-identity", "--renew")
    assert deployment_id.deployment("default") not in (first, "")
    assert_unique([*take("r2", 15), 1, 2, 3, 4, 5])


def restore(name: str, backup: tuple[int, int, str]) -> None:
    """A data-only restore of one row into the same table: its value, version and history as backed up."""
    value, version, history = backup
    Sequence.objects.filter(name=name).update(value=value, version=version, history=history)
    clear_cache()  # the app was stopped: its processes start afresh


def test_a_data_only_restore_with_advance_repeats_nothing_while_redis_keeps_its_states(settings, redis_server):
    """Per Backups and restores: stop the app, restore, `segment_seq advance --by N`, start. Redis still holds
    a pending super-segment that ends above the advanced value."""
    use_tier(settings, redis_server.url)
    numbers = take("r3", 5)
    row = Sequence.objects.get(name="r3")
    backup = (row.value, row.version, row.history)  # the backup: the first super-segment lent, [1, 1000]
    numbers += take("r3", 600)  # past REFILL_AT: Redis holds the pending [1001, 3000] now
    restore("r3", backup)
    call_command("segment_seq", "advance", "--by", "1500", "r3")  # to 2,500: below Redis's 3,000
    from django_segment_seq.redistier import state

    assert state.held("default", "r3") is None  # emptied: nothing below the table's value is left in Redis
    numbers += list(next_values("r3", 50))  # more than MAX_BLOCK: straight from the table
    clear_cache()  # the rest of that block is this process's; the app's other processes take from Redis
    numbers += take("r3", 2500)
    repeats = len(numbers) - len(set(numbers))
    print(f"\n[restore, advance] {len(numbers)} numbers, {repeats} repeats")
    assert_unique(numbers)
    held = state.held("default", "r3")
    assert held is not None and held.first > 2500


def test_a_super_segment_reserved_before_advance_is_refused_after_it(settings, redis_server):
    """`advance` while the app runs: a refill reserved before it and installed after it would put a super-segment
    below the table's new value into Redis. Redis refuses it (advance raised the state's top)."""
    from django_segment_seq.allocator import loop
    from django_segment_seq.redistier import state
    from django_segment_seq.redistier.source import pad

    use_tier(settings, redis_server.url)
    take("r10", 5)
    late = loop.allocate(BlockRequest("default", "r10", 1, prefer=2000)).block  # a refill in flight when advance runs
    call_command("segment_seq", "advance", "--by", "100000", "r10")
    advanced = Sequence.objects.get(name="r10").value
    tier = clients.tier(tier_config().raw)  # type: ignore[union-attr]
    reply = tier.install(keys=[key_of("r10")], args=[str(late.first - 1), late.size, pad(late.first), pad(late.last)])
    held = state.held("default", "r10")
    print(f"\n[install after advance] {late.first}..{late.last}: reply {reply}, Redis holds {held}")
    assert int(reply[0]) == 0 and held is None
    clear_cache()  # a process started now (one running keeps its cached block: the margin covers it)
    assert min(take("r10", 20)) > advanced


def test_the_table_found_below_what_it_lent_redis_is_moved_past_it(settings, redis_server):
    """A restore handled without emptying Redis (`advance` before this release): the INSTALL Redis refuses as not
    above its top shows the table went back. The reservation is never handed out, the table moves past the top."""
    use_tier(settings, redis_server.url)
    numbers = take("r4", 5)
    row = Sequence.objects.get(name="r4")
    backup = (row.value, row.version, row.history)  # at 1,000
    numbers += take("r4", 2100)  # Redis's second refill: [3001, 5000] pending, the top 5,000
    lease = key_of("r4") + ":lease"
    redis_server.client().set(lease, "held elsewhere", px=60_000)  # no refill ahead: Redis runs dry at 5,000
    numbers += take("r4", 5000 - len(numbers))
    redis_server.client().delete(lease)
    restore("r4", backup)  # at 1,000: the next refill reserves [1001, 3000] again, below Redis's top
    numbers += take("r4", 100)
    repeats = len(numbers) - len(set(numbers))
    value = Sequence.objects.get(name="r4").value
    print(f"\n[table behind Redis] {len(numbers)} numbers, {repeats} repeats, the table at {value}")
    assert_unique(numbers)
    assert value > 5000


def test_a_restore_the_app_sees_leaves_no_super_segment_below_the_table(settings, redis_server):
    """A process finds the row behind its own last write: the next reservation skips FAILOVER_SKIP, and Redis must
    hold nothing below it from then on (what it held was lent before the restore)."""
    from django_segment_seq.redistier import state

    use_tier(settings, redis_server.url)
    numbers = take("r5", 5)
    row = Sequence.objects.get(name="r5")
    backup = (row.value, row.version, row.history)
    numbers += take("r5", 600)
    Sequence.objects.filter(name="r5").update(value=backup[0], version=backup[1], history=backup[2])
    while Sequence.objects.get(name="r5").value < 10_000_000:  # this process saw the row go back: a refill skips
        numbers += take("r5", 10)
        assert len(numbers) < 5000, "no refill skipped"
    held = state.held("default", "r5")
    assert held is not None
    print(f"\n[restore seen] Redis holds {held.first}..{held.last}, pending {held.pending}")
    assert_unique(numbers)
    assert held.first > 10_000_000


def test_an_orphaned_lease_costs_fallback_callers_a_short_wait(settings, redis_server):
    """A refill lease whose holder vanished (its SET reply lost): with FALLBACK on, a caller that finds the row
    empty takes its block from the table after a moment, not after the lease's 5 s."""
    use_tier(settings, redis_server.url)
    take("r6", 5)
    redis_server.client().delete(key_of("r6"))
    redis_server.client().set(key_of("r6") + ":lease", "orphan", px=5000)
    clear_cache()
    started = time.monotonic()
    numbers = take("r6", 30)
    waited = time.monotonic() - started
    print(f"\n[orphaned lease] 30 numbers in {waited:.2f} s")
    assert_unique([*numbers, 1, 2, 3, 4, 5])
    assert waited < 2.0  # the lease would hold them 5 s


def test_a_row_held_elsewhere_is_waited_for_once(settings, redis_server):
    """A refill lease held elsewhere while the row is held by another transaction (a restore, `advance` with the
    app running): a caller waited the whole lease (5 s), then the table's LOCK_TIMEOUT (2 s) on top."""
    from django_segment_seq.exceptions import SequenceError

    if connections["default"].vendor == "sqlite":
        pytest.skip("SQLite has no row locks: a writer elsewhere is waited for by the table path's own rules")
    use_tier(settings, redis_server.url)
    take("r-held", 5)
    redis_server.client().delete(key_of("r-held"))
    redis_server.client().set(key_of("r-held") + ":lease", "held elsewhere", px=5000)
    clear_cache()
    release = hold_row("r-held")
    started = time.monotonic()
    try:
        outcome = str(next_value("r-held"))
    except SequenceError as exc:
        outcome = type(exc).__name__
    finally:
        waited = time.monotonic() - started
        release()
    print(f"\n[row held] {outcome} after {waited:.2f} s")
    assert waited < 4.5  # LOCK_TIMEOUT (2 s) and a moment, not the lease's 5 s before it


def hold_row(name: str) -> Any:
    """Another transaction holding row `name` (SELECT ... FOR UPDATE); closed by calling what this returns."""
    other = connections.create_connection("default")
    other.set_autocommit(False)
    table = other.ops.quote_name(Sequence._meta.db_table)
    with other.cursor() as cursor:
        cursor.execute(f"SELECT value FROM {table} WHERE name = %s FOR UPDATE", [name])
    return other.close


def test_without_fallback_the_error_names_redis_and_retry_after(settings, redis_server):
    from django_segment_seq.exceptions import SequenceUnavailable

    use_tier(settings, redis_server.url, FALLBACK=False, RETRY_AFTER=3.0)
    redis_server.kill()
    for _ in range(2):  # the failure, then a call within RETRY_AFTER
        with pytest.raises(SequenceUnavailable) as raised:
            next_value("r7")
        message = str(raised.value)
        assert "Redis" in message and "RETRY_AFTER (3 s)" in message and "database 'redis'" not in message


def test_resp3(settings, redis_server):
    """ "protocol": 3 in OPTIONS: Lua's false comes back as False; a missing row's state is still None."""
    from django_segment_seq.redistier import state

    use_tier(settings, redis_server.url, OPTIONS={"protocol": 3, "socket_timeout": 0.5})
    assert state.held("default", "r-none") is None
    assert take("r8", 25) == list(range(1, 26))
    held = state.held("default", "r8")
    assert held is not None and held.valid and held.first == 1


def test_a_cache_alias_brings_its_options(settings, servers, tmp_path):
    """CACHE names a CACHES alias whose OPTIONS give the database and the password: the tier uses both."""
    server = RedisServer(tmp_path / "auth").start()
    servers.append(server)
    server.client().config_set("requirepass", "s3cret")
    settings.CACHES = {
        **settings.CACHES,
        "shared": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{server.port}",
            "OPTIONS": {"db": 3, "password": "s3cret"},
        },
    }
    use_tier(settings, None, CACHE="shared", FALLBACK=False)
    assert take("r9", 3) == [1, 2, 3]
    import redis

    assert redis.Redis(port=server.port, db=3, password="s3cret").keys("segseq:*")
