"""redis-server and Sentinel inside the network namespaces of tests/support/netns.py: each listens on its namespace's
address (the same ports everywhere) and, a server, on a Unix socket in its folder, through which the test process,
outside the namespaces, asks it what it needs to know.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import redis

from tests.support.netns import Node

PORT, SENTINEL_PORT = 6379, 26379
START_TIMEOUT = 20


class NamespacedRedis:
    """One redis-server in `node`'s namespace, without persistence."""

    def __init__(self, node: Node, workdir: Path, *args: str) -> None:
        self.node = node
        self.dir = workdir
        self.dir.mkdir(parents=True)
        command = ["redis-server", "--port", str(PORT), "--bind", node.address, "--dir", str(self.dir),
                   "--unixsocket", str(self.dir / "sock"), "--save", "", "--appendonly", "no", "--protected-mode", "no",
                   "--logfile", str(self.dir / "log"), *args]  # fmt: skip
        self.proc = subprocess.Popen(node.command(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if self.client().ping():
                    return
            except (redis.RedisError, OSError):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server in {node.name} did not start") from None
                time.sleep(0.02)

    @property
    def url(self) -> str:
        return f"redis://{self.node.address}:{PORT}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(unix_socket_path=str(self.dir / "sock"), socket_timeout=5)

    def role(self) -> str:
        return str(self.client().info("replication")["role"])

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class NamespacedSentinel:
    """One Sentinel in `node`'s namespace watching `master` as service "seg" with a quorum of one."""

    def __init__(self, node: Node, workdir: Path, master: NamespacedRedis) -> None:
        self.node = node
        conf = workdir / "sentinel.conf"
        conf.write_text(
            f"port {SENTINEL_PORT}\nbind {node.address}\nprotected-mode no\ndir {workdir}\n"
            f"sentinel monitor seg {master.node.address} {PORT} 1\n"
            "sentinel down-after-milliseconds seg 1000\nsentinel failover-timeout seg 5000\n"
        )
        self.proc = subprocess.Popen(
            node.command(["redis-server", str(conf), "--sentinel"]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def ask(self, *command: str) -> str:
        """A Sentinel command through redis-cli inside the namespace (a Sentinel has no Unix socket here)."""
        done = subprocess.run(
            self.node.command(["redis-cli", "-h", self.node.address, "-p", str(SENTINEL_PORT), *command]),
            capture_output=True, text=True, timeout=10,
        )  # fmt: skip
        return done.stdout

    def master_address(self) -> str:
        return self.ask("SENTINEL", "get-master-addr-by-name", "seg").split("\n")[0].strip()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def start_cluster(nodes: list[Node], workdir: Path) -> list[NamespacedRedis]:
    """A Redis Cluster of three masters, each with a replica, one node per namespace of `nodes`, every slot covered."""
    servers = [
        NamespacedRedis(node, workdir / node.name, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                        "--cluster-config-file", str(workdir / node.name / "nodes.conf"))
        for node in nodes
    ]  # fmt: skip
    subprocess.run(
        nodes[0].command(["redis-cli", "--cluster", "create", *(f"{node.address}:{PORT}" for node in nodes),
                          "--cluster-replicas", "1", "--cluster-yes"]),
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    # Every node must know every other and each replica its master's data before a cut: a master that has not
    # yet heard of a replica through the cluster's gossip would not vote for its promotion.
    while not all(cluster_ok(server) and settled(server, len(servers)) for server in servers):
        if time.monotonic() > deadline:
            raise RuntimeError("the Redis Cluster did not reach state ok")
        time.sleep(0.1)
    return servers


def cluster_ok(server: NamespacedRedis) -> bool:
    try:
        return str(server.client().cluster("info")["cluster_state"]) == "ok"
    except (redis.RedisError, OSError):
        return False


def settled(server: NamespacedRedis, nodes: int) -> bool:
    """Whether `server`'s table lists every node, none in a handshake, half of them replicas, and, for a replica,
    whether its link to its master is up."""
    try:
        client = server.client()
        lines = client.execute_command("CLUSTER", "NODES").decode().splitlines()
        replication = client.info("replication")
    except (redis.RedisError, OSError):
        return False
    flags = [line.split()[2] for line in lines]
    replicas = sum(1 for flag in flags if "slave" in flag)
    handshaking = any("handshake" in flag or "noaddr" in flag for flag in flags)
    linked = replication.get("role") != "slave" or replication.get("master_link_status") == "up"
    return len(lines) == nodes and replicas == nodes // 2 and not handshaking and linked
