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

import time

from tests.support.partition_galera import PORT, NamespacedGalera
from tests.support.partition_runs import errors_of, finish, numbers_of, repeats_in, run_to_end, start_worker, wait_ready

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


def test_a_minority_node_cut_off_bounds_its_callers_and_rejoins(network, folder):
    nodes = [network.node(f"galera{index}") for index in (1, 2, 3)]
    everywhere, minority = network.node("apps-all"), network.node("apps-minority")
    cluster = NamespacedGalera(nodes, folder)
    try:
        cluster.start()
        first, _, third = cluster.nodes
        first.execute(f"CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
        target = ("mysql", third.node.address, str(PORT), DATABASE)
        run_to_end(start_worker(everywhere, folder, -1, "migrate", (*target[:1], first.node.address, *target[2:]), {}),
                   "the migration")  # fmt: skip
        # The defaults, and SERVERS listing the minority node first: those who can must leave it.
        servers = [node.address for node in (third, *cluster.nodes[:2])]
        settings = {"PREFETCH": False, "ADAPTIVE_STEP": False, "SERVERS": {"default": servers}}
        sides = [everywhere] * WORKERS_PER_SIDE + [minority] * WORKERS_PER_SIDE
        marks = ("partitioned", "rejoined")
        workers = [start_worker(side, folder, i, "take", target, settings, marks) for i, side in enumerate(sides)]
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
    numbers = numbers_of(runs)
    errors = errors_of(runs)
    moved, cut_off = runs[:WORKERS_PER_SIDE], runs[WORKERS_PER_SIDE:]
    during = [sum(run["after_marks"][0].values()) - sum(run["after_marks"][1].values()) for run in moved]
    after_rejoin = [sum(run["after_marks"][1].values()) for run in cut_off]
    longest_minority = max(run["longest"]["cached"] for run in cut_off)
    longest_majority = max(run["longest"]["cached"] for run in moved)
    print(
        f"\nGalera, minority node cut off {PARTITIONED:.0f} s: {sum(map(len, numbers.values()))} numbers, repeats "
        f"{[repeats_in(got) for got in numbers.values()]}, errors {errors}; non-Primary {cut:.1f} s after the "
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
