"""MariaDB Galera under load: six processes, two on each of three nodes, take numbers of one row at once.

Every node takes writes, so the compare-and-sets of different nodes meet at commit (certification, error
1213), which the allocator counts as lost races. One node is then killed with SIGKILL: the others stop
every write for a few seconds until it is evicted, the callers on it go on through another node, and it
rejoins and is used again. Every number handed out is collected and checked for repeats.
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

import pytest
from django.db import connection

from tests.clusters.conftest import GALERA_DATABASE
from tests.conftest import ROOT, assert_unique
from tests.support.galera import REJOIN_TIMEOUT, GaleraCluster, Node
from tests.support.partition_runs import wait_ready

WORKERS_PER_NODE = 2
# Fixed ranges of 10: every worker goes back to the row many times a second.
FIXED_RANGES: dict[str, object] = {"PREFETCH": False, "ADAPTIVE_STEP": False}
# The app's defaults: background fetches (which callers wait for or join) and the adaptive step.
APP_DEFAULTS: dict[str, object] = {"PREFETCH": True, "ADAPTIVE_STEP": True}
# A worker that has not finished this long after being told to stop hangs: the test fails.
WORKER_TIMEOUT = 60

INSERT_ROW = (
    "INSERT INTO django_segment_seq_sequence (name, value, step, min_value, max_value, cycle, version, history, "
    "created, modified) VALUES ('{name}', 0, 10, 1, 9223372036854775806, false, 0, '', now(), now())"
)


def start_worker(port: int, database: str, name: str, out: Path, stop: Path, segment_seq: dict[str, object]):
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.galera_worker", str(port), database, name, str(out), str(stop),
         json.dumps(segment_seq)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def servers_from(galera: GaleraCluster, own: Node) -> dict[str, list[str]]:
    """SERVERS for a worker whose Django connection goes to `own`: its node first, then the others in order."""
    return {"default": [own.address] + [node.address for node in galera.nodes if node is not own]}


def run(
    tmp_path: Path,
    name: str,
    ports: list[int],
    database: str,
    segment_seq: Callable[[int], dict[str, object]],
    scenario: Callable[[], None],
) -> dict:
    """Start one worker per port, run `scenario` once each has its first number, stop them; what they handed out,
    and their figures."""
    stop = tmp_path / f"stop-{name}"
    outs = [tmp_path / f"{name}-{index}.json" for index in range(len(ports))]
    workers = [
        start_worker(port, database, name, out, stop, segment_seq(port)) for port, out in zip(ports, outs, strict=True)
    ]
    try:
        wait_ready(workers, tmp_path, stem=f"{name}-")  # a start slower than the scenario's first fault, when loaded
        scenario()
    finally:
        stop.touch()
        failures = []
        for worker in workers:
            try:
                _, err = worker.communicate(timeout=WORKER_TIMEOUT)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.communicate()
                failures.append("a worker hung")
                continue
            if worker.returncode != 0:
                failures.append(err[-3000:])
        assert not failures, "\n".join(failures)
    runs = [json.loads(out.read_text()) for out in outs]
    numbers = [number for one in runs for number in one["numbers"]]
    errors: collections.Counter[str] = collections.Counter()
    figures: collections.Counter[str] = collections.Counter()
    for one in runs:
        errors.update(one["errors"])
        figures.update(one["figures"])
    return {
        "runs": runs,
        "numbers": numbers,
        "repeats": sum(times - 1 for times in collections.Counter(numbers).values() if times > 1),
        "errors": dict(errors),
        "messages": [message for one in runs for message in one["messages"]],
        "longest_pause": max(one["longest_pause"] for one in runs),
        # Each worker's own pace from its first call to its stop (not its start-up), added up.
        "per_second": sum(len(one["numbers"]) / one["seconds"] for one in runs),
        "figures": dict(figures),
    }


def report(label: str, result: dict, **extra: object) -> None:
    more = "".join(f", {key.replace('_', ' ')} {value}" for key, value in extra.items())
    print(
        f"\n{label}: {len(result['numbers'])} numbers ({result['per_second']:,.0f}/s), {result['repeats']} repeats, "
        f"errors {result['errors']}, longest pause {result['longest_pause']:.2f} s, ranges "
        f"{result['figures']['ranges_fetched']}, lost compare-and-sets {result['figures']['retries']}, "
        f"failures retried {result['figures']['failures']}, row found held {result['figures']['busy']}{more}"
    )


def cluster_ports(galera: GaleraCluster) -> list[int]:
    return [node.port for node in galera.nodes for _ in range(WORKERS_PER_NODE)]


@pytest.mark.django_db(transaction=True)
def test_a_single_server_for_comparison(tmp_path):
    """Six workers on the suite's own MariaDB server, as long as the multi-primary run: the figures to compare."""
    with connection.cursor() as cursor:
        cursor.execute(INSERT_ROW.format(name="single"))
    port = int(connection.settings_dict.get("PORT") or 3306)
    database = str(connection.settings_dict["NAME"])
    result = run(tmp_path, "single", [port] * 6, database, lambda port: FIXED_RANGES, lambda: time.sleep(5))
    report("single server, 6 workers", result)
    assert_unique(result["numbers"])
    assert result["errors"] == {}, result["messages"]


@pytest.mark.parametrize("ranges", [FIXED_RANGES, APP_DEFAULTS], ids=["fixed-ranges", "app-defaults"])
def test_multi_primary_repeats_nothing_and_raises_nothing(galera, tmp_path, ranges):
    """Two workers on each node take numbers of one row at once; conflicts at commit are lost races, retried.

    With the app's defaults too: a background fetch slowed by certification conflicts is no reason to refuse a
    caller on a healthy cluster.
    """
    name = "multi" if ranges is FIXED_RANGES else "multi-prefetch"
    galera.nodes[0].execute(INSERT_ROW.format(name=name), GALERA_DATABASE)
    result = run(tmp_path, name, cluster_ports(galera), GALERA_DATABASE, lambda port: ranges, lambda: time.sleep(5))
    report(f"Galera, 3 nodes x 2 workers, {name}", result)
    assert_unique(result["numbers"])
    assert result["errors"] == {}, result["messages"]
    assert all(one["numbers"] for one in result["runs"]), "every worker took numbers"


def commits_on(node: Node) -> int:
    """Transactions clients committed on `node` since it started; what other nodes replicate is not counted."""
    return int(node.execute("SHOW GLOBAL STATUS LIKE 'wsrep_local_commits'")[0][1])


def longest_pause(run: dict, start: float, end: float) -> float:
    """A worker's longest wait for a number that began between `start` and `end` (monotonic seconds)."""
    return max((seconds for began, seconds in run["pauses"] if start <= began <= end), default=0.0)


@pytest.mark.parametrize(
    "ranges", [FIXED_RANGES, {"PREFETCH": True, "ADAPTIVE_STEP": False}], ids=["fixed-ranges", "prefetch"]
)
def test_node_loss_pauses_callers_without_errors_and_the_node_is_used_again(galera, tmp_path, ranges):
    """SIGKILL node 3 under load: nobody gets an error, its callers go on through the others, and it rejoins.

    With background fetches too: a caller that runs out while one waits out the cluster's pause waits for it or
    joins it, within CLUSTER_PAUSE, and is not refused.
    """
    name = "loss" if ranges is FIXED_RANGES else "loss-prefetch"
    galera.nodes[0].execute(INSERT_ROW.format(name=name), GALERA_DATABASE)
    lost = galera.nodes[2]
    figures: dict[str, float] = {}

    def scenario() -> None:
        time.sleep(1.5)
        figures["killed_at"] = time.monotonic()
        lost.kill()
        time.sleep(9)  # the others' writes stop until the dead node is evicted (about 6.4 s measured)
        figures["restarted_at"] = time.monotonic()
        lost.start()
        figures["rejoin"] = galera.wait_synced(galera.nodes, 3, REJOIN_TIMEOUT)
        deadline = time.monotonic() + 10  # callers move back within RECHECK_SECONDS
        while (figures.setdefault("back", 0) or 0) == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
            figures["back"] = commits_on(lost)
        time.sleep(1)

    def segment_seq(port: int) -> dict[str, object]:
        own = next(node for node in galera.nodes if node.port == port)
        return {**ranges, "SERVERS": servers_from(galera, own)}

    ports = cluster_ports(galera)
    result = run(tmp_path, name, ports, GALERA_DATABASE, segment_seq, scenario)
    killed, restarted = figures["killed_at"], figures["restarted_at"]
    on_the_lost_node = [port == lost.port for port in ports]
    loss = [longest_pause(one, killed - 1, killed + 12) for one in result["runs"]]
    rejoin = [longest_pause(one, restarted, restarted + figures["rejoin"] + 3) for one in result["runs"]]
    pairs = list(zip(loss, on_the_lost_node, strict=True))
    report(
        f"Galera, node 3 killed under load, {name}",
        result,
        pause_on_the_loss_survivors=f"{max(p for p, on_lost in pairs if not on_lost):.2f} s",
        pause_on_the_loss_lost_nodes_callers=f"{max(p for p, on_lost in pairs if on_lost):.2f} s",
        pause_at_the_rejoin=f"{max(rejoin):.2f} s",
        rejoined_in=f"{figures['rejoin']:.1f} s",
        compare_and_sets_on_the_rejoined_node=int(figures["back"]),
    )
    assert_unique(result["numbers"])
    assert result["errors"] == {}, result["messages"]
    # The nodes of one cluster share one server history: no failover skip was taken (db/history.py).
    assert max(result["numbers"]) < 10_000_000
    # The dead node's callers went on: every worker took numbers well after the kill.
    assert all(one["numbers"] for one in result["runs"])
    assert result["longest_pause"] < 20  # CLUSTER_PAUSE: past it, a caller would have had an error
    assert figures["back"] > 0, "the rejoined node was not used again"


@pytest.mark.parametrize("refusal", ["read_only", "desynced"])
def test_a_node_read_only_or_not_synced_is_not_allocated_on(galera, tmp_path, refusal):
    """Callers whose first server is read-only, or not Synced, take their numbers through the next one."""
    galera.nodes[0].execute(INSERT_ROW.format(name=refusal), GALERA_DATABASE)
    refused = galera.nodes[1]
    setting = "read_only" if refusal == "read_only" else "wsrep_desync"
    refused.execute(f"SET GLOBAL {setting} = ON")
    before = commits_on(refused)
    seen: list[int] = []

    def scenario() -> None:
        for _ in range(14):  # past RECHECK_SECONDS: the refused node is asked again, and refused again
            time.sleep(0.5)
            seen.append(commits_on(refused) - before)

    try:
        result = run(
            tmp_path,
            refusal,
            [refused.port] * 2,
            GALERA_DATABASE,
            lambda port: {**FIXED_RANGES, "SERVERS": servers_from(galera, refused)},
            scenario,
        )
    finally:
        refused.execute(f"SET GLOBAL {setting} = OFF")
    report(f"Galera, first server {refusal}", result)
    assert_unique(result["numbers"])
    assert result["errors"] == {}, result["messages"]
    assert all(one["numbers"] for one in result["runs"])
    assert max(seen) == 0, f"compare-and-sets sent to the refused node: {seen}"


def test_callers_leave_a_node_that_blocks_writes_as_a_state_transfer_donor(galera, tmp_path):
    """A donor of a full state transfer (rsync) blocks every write, for as long as the copy takes: played here as
    Galera does it, the node desynced (its state Donor/Desynced) and then FLUSH TABLES WITH READ LOCK, longer than
    CLUSTER_PAUSE. Callers on the donor go on through another node, the first attempt that meets the block.

    The order matters: FLUSH TABLES WITH READ LOCK alone stops writes while it waits for the statements in flight,
    and the node still says Synced until it has the lock. A caller meeting that window takes the node for a
    cluster that paused and waits one more LOCK_TIMEOUT there: the likeliest cause of one 5.2-s pause on a loaded
    machine, when the lock alone was played.
    """
    galera.nodes[0].execute(INSERT_ROW.format(name="donor"), GALERA_DATABASE)
    donor = galera.nodes[0]
    states: list[str] = []
    lock: dict[str, float] = {}

    def scenario() -> None:
        import MySQLdb  # installed wherever the MariaDB tests run

        time.sleep(1)
        holder = MySQLdb.connect(host="127.0.0.1", port=donor.port, user="root", connect_timeout=3)
        try:
            holder.cursor().execute("SET GLOBAL wsrep_desync = ON")
            lock["asked"] = time.monotonic()
            holder.cursor().execute("FLUSH TABLES WITH READ LOCK")
            lock["held"] = time.monotonic()
            for _ in range(8):  # 8 s: past the workers' CLUSTER_PAUSE of 5 s
                time.sleep(1)
                states.append(donor.status()["wsrep_local_state_comment"])
        finally:
            holder.close()
            lock["released"] = time.monotonic()
            donor.execute("SET GLOBAL wsrep_desync = OFF")
        time.sleep(1)

    result = run(
        tmp_path,
        "donor",
        [donor.port] * 2,
        GALERA_DATABASE,
        lambda port: {**FIXED_RANGES, "CLUSTER_PAUSE": 5, "SERVERS": servers_from(galera, donor)},
        scenario,
    )
    report(
        "Galera, first server blocked as a donor",
        result,
        donor_states=sorted(set(states)),
        lock=f"taken in {lock['held'] - lock['asked']:.2f} s, held {lock['released'] - lock['held']:.2f} s",
        pauses_from_the_lock=[
            f"{began - lock['asked']:+.2f} s: {seconds:.2f} s"
            for one in result["runs"]
            for began, seconds in one["pauses"]
        ],
    )
    assert_unique(result["numbers"])
    assert result["errors"] == {}, result["messages"]
    # One LOCK_TIMEOUT (2 s) on the donor, then the next node: a caller that stayed would wait CLUSTER_PAUSE.
    assert result["longest_pause"] < 5
