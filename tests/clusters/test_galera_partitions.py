"""MariaDB Galera with a minority node partitioned, in network namespaces, while processes take numbers.

Three nodes, each in a namespace of its own; two application processes reach every node, two reach the third node
only. The third node is cut off (silence) from the other two, and with it the processes that reach only it: it
becomes non-Primary and refuses writes. The processes that reach every node move to the majority through SERVERS;
those that reach only the minority get numbers or SequenceUnavailable within MINORITY_BOUND seconds a call, by
default (CLUSTER_LOST). Then the partition heals, the node rejoins, and everyone takes numbers again. Every number of
a plain, a per-period and a gapless row is checked for repeats; the run proves its fault (the node non-Primary,
the other two a Primary component of two) before it is judged, else it fails.
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
from tests.support.partition_galera import PORT, NamespacedGalera
from tests.support.partition_worker import ROWS

DATABASE = "segseq_partition"
WORKERS_PER_SIDE = 2
HEALTHY = 2.0
# How long the partition lasts once the minority node is non-Primary: past the bound below, so that every caller
# cut off with it has ended a call by that bound at least once.
PARTITIONED = 12.0
# The longest call of a process that reaches only the minority node: CLUSTER_LOST (7 s) and a connection attempt
# under way then (connect_timeout 2 s), with the defaults.
MINORITY_BOUND = 10.0
# The longest call of a process that reaches every node: the majority's pause while it evicts the node, waited out
# within CLUSTER_PAUSE (20 s).
MAJORITY_BOUND = 20.0
# A node's rejoin, by incremental state transfer.
REJOIN = 60.0
AFTER_REJOIN = 3.0
ALLOWED_ERRORS = {"cached:SequenceUnavailable", "gapless:SequenceUnavailable", "gapless:OperationalError"}


@pytest.fixture
def folder():
    """A folder the servers, run as mysql, may enter (pytest's own temporary folders are closed to it)."""
    made = Path(tempfile.mkdtemp(prefix="segseq-galera-partition-"))
    os.chmod(made, 0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def repeats_in(numbers: list[int]) -> int:
    return sum(times - 1 for times in collections.Counter(numbers).values() if times > 1)


def worker(node, mode: str, host: str, index: int, folder: Path, segment_seq: dict[str, object]):
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        SEGMENT_SEQ_TEST_GO=str(folder / "go"),
        SEGMENT_SEQ_TEST_MARK=os.pathsep.join([str(folder / "partitioned"), str(folder / "rejoined")]),
    )
    command = [
        sys.executable, "-m", "tests.support.partition_worker", mode, "mysql", host, str(PORT), DATABASE,
        str(folder / f"worker{index}.json"), str(folder / "stop"), json.dumps(segment_seq),
    ]  # fmt: skip
    return subprocess.Popen(node.command(command), cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)


def finish(workers: list[subprocess.Popen[str]], folder: Path) -> list[dict]:
    (folder / "stop").touch()
    for proc in workers:
        try:
            _, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("a worker hung after the partition")
        assert proc.returncode == 0, err[-3000:]
    return [json.loads((folder / f"worker{index}.json").read_text()) for index in range(len(workers))]


def wait_ready(workers: list[subprocess.Popen[str]], folder: Path) -> None:
    deadline = time.monotonic() + 60
    for index, proc in enumerate(workers):
        while not (folder / f"worker{index}.json.ready").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"worker {index} did not get ready: {proc.stderr.read()[-3000:] if proc.stderr else ''}")
            time.sleep(0.02)


def test_a_minority_node_cut_off_bounds_its_callers_and_rejoins(network, folder):
    nodes = [network.node(f"galera{index}") for index in (1, 2, 3)]
    everywhere, minority = network.node("apps-all"), network.node("apps-minority")
    cluster = NamespacedGalera(nodes, folder)
    try:
        cluster.start()
        first, _, third = cluster.nodes
        first.execute(f"CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
        migration = worker(everywhere, "migrate", first.node.address, -1, folder, {})
        _, err = migration.communicate(timeout=180)
        assert migration.returncode == 0, err[-3000:]
        # The defaults, and SERVERS listing the minority node first: those who can must leave it.
        servers = [node.address for node in (third, *cluster.nodes[:2])]
        settings = {"PREFETCH": False, "ADAPTIVE_STEP": False, "SERVERS": {"default": servers}}
        sides = [everywhere] * WORKERS_PER_SIDE + [minority] * WORKERS_PER_SIDE
        workers = [worker(side, "take", third.node.address, i, folder, settings) for i, side in enumerate(sides)]
        try:
            wait_ready(workers, folder)
            (folder / "go").touch()
            time.sleep(HEALTHY)
            for majority in nodes[:2]:
                network.cut(nodes[2], majority)
                network.cut(minority, majority)
            cut = cluster.wait(
                lambda: (
                    third.status().get("wsrep_cluster_status") not in ("Primary", None)
                    and first.status().get("wsrep_cluster_size") == "2"
                ),
                "the third node non-Primary and the other two a Primary component of two",
                30,
            )
            (folder / "partitioned").touch()
            status_cut = third.status()
            time.sleep(PARTITIONED)
            for majority in nodes[:2]:
                network.heal(nodes[2], majority)
                network.heal(minority, majority)
            rejoin = cluster.wait(lambda: all(node.synced(3) for node in cluster.nodes), "the node's rejoin", REJOIN)
            (folder / "rejoined").touch()
            time.sleep(AFTER_REJOIN)
        finally:
            runs = finish(workers, folder)
    finally:
        cluster.stop()
    numbers = {row: [n for run in runs for n in run["numbers"][row]] for row in ROWS}
    errors: collections.Counter[str] = collections.Counter()
    for run in runs:
        errors.update(run["errors"])
    moved, cut_off = runs[:WORKERS_PER_SIDE], runs[WORKERS_PER_SIDE:]
    during = [sum(run["after_marks"][0].values()) - sum(run["after_marks"][1].values()) for run in moved]
    after_rejoin = [sum(run["after_marks"][1].values()) for run in cut_off]
    longest_minority = max(run["longest"]["cached"] for run in cut_off)
    longest_majority = max(run["longest"]["cached"] for run in moved)
    print(
        f"\nGalera, minority node cut off {PARTITIONED:.0f} s: {sum(map(len, numbers.values()))} numbers, repeats "
        f"{[repeats_in(got) for got in numbers.values()]}, errors {dict(errors)}; non-Primary {cut:.1f} s after the "
        f"cut ({status_cut}); numbers during the partition by the processes reaching every node {during}; longest "
        f"call: reaching only the minority {longest_minority:.2f} s, every node {longest_majority:.2f} s; "
        f"rejoined in {rejoin:.1f} s; numbers after it by the cut-off processes {after_rejoin}; "
        f"{[m for run in runs for m in run['messages']][:4]}"
    )
    assert all(repeats_in(got) == 0 for got in numbers.values())
    assert set(errors) <= ALLOWED_ERRORS, [run["messages"] for run in runs]
    assert not any(kind.startswith("cached:") for run in moved for kind in run["errors"]), moved[0]["messages"]
    assert min(during) > 0, "the processes reaching every node did not move to the majority"
    assert longest_minority < MINORITY_BOUND
    assert longest_majority < MAJORITY_BOUND
    assert min(after_rejoin) > 0, "the processes cut off with the minority node took no number after its rejoin"
