"""A three-node MariaDB Galera cluster inside the network namespaces of tests/support/netns.py: each node listens on
its namespace's address (the same ports in every namespace) and on a Unix socket in its folder, through which the
test process, outside the namespaces, asks it what it needs to know.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.support.galera import CLUSTER_NAME, CONFIG, FORM_TIMEOUT, PROVIDER, USER, install_datadir
from tests.support.netns import Node

PORT, GMCAST, IST, SST = 3306, 4567, 4568, 4444


class NamespacedGaleraNode:
    """One node in `node`'s namespace, in a process group of its own."""

    def __init__(self, node: Node, workdir: Path, peers: list[str]) -> None:
        self.node = node
        self.dir = workdir
        self.dir.mkdir()
        (self.dir / "data").mkdir()
        self.process: subprocess.Popen[bytes] | None = None
        (self.dir / "my.cnf").write_text(
            CONFIG.format(
                datadir=self.dir / "data", dir=self.dir, port=PORT, address=node.address, user=USER, provider=PROVIDER,
                cluster=CLUSTER_NAME, peers=",".join(f"{peer}:{GMCAST}" for peer in peers), name=node.name,
                gmcast=GMCAST, ist=IST, sst=SST,
            )
        )  # fmt: skip
        if os.geteuid() == 0:
            for path in (self.dir, self.dir / "data"):
                shutil.chown(path, USER, USER)

    @property
    def address(self) -> str:
        return f"{self.node.address}:{PORT}"

    def initialise(self) -> None:
        install_datadir(self.dir / "data")

    def start(self, new_cluster: bool = False) -> None:
        binary = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        command = [binary, f"--defaults-file={self.dir / 'my.cnf'}", *(["--wsrep-new-cluster"] if new_cluster else [])]
        with open(self.dir / "stdout.log", "ab") as log:
            self.process = subprocess.Popen(
                self.node.command(command), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def kill(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self.process = None

    def execute(self, sql: str, database: str | None = None, *, dirty: bool = False) -> list[tuple]:
        """One statement as root through the Unix socket, committed; `dirty` lets a non-Primary node answer it."""
        import MySQLdb

        conn = MySQLdb.connect(unix_socket=str(self.dir / "sock"), user="root", db=database or "", connect_timeout=3)
        try:
            cursor = conn.cursor()
            if dirty:
                cursor.execute("SET SESSION wsrep_dirty_reads = ON")
            cursor.execute(sql)
            rows = list(cursor.fetchall())
            if not dirty:
                conn.commit()
            return rows
        finally:
            conn.close()

    def status(self) -> dict[str, str]:
        """wsrep_cluster_size, _status ("Primary" or "non-Primary"), _local_state_comment and _ready; {} if down."""
        try:
            rows = self.execute(  # a dirty read, which a non-Primary node answers (it refuses others: 1047)
                "SHOW GLOBAL STATUS WHERE Variable_name IN "
                "('wsrep_cluster_size', 'wsrep_local_state_comment', 'wsrep_ready', 'wsrep_cluster_status')",
                dirty=True,
            )
        except Exception:  # noqa: BLE001 - not up yet, or not answering
            return {}
        return {name.lower(): str(value) for name, value in rows}

    def synced(self, size: int) -> bool:
        status = self.status()
        return (
            status.get("wsrep_local_state_comment") == "Synced"
            and status.get("wsrep_cluster_size") == str(size)
            and status.get("wsrep_ready") == "ON"
        )


class NamespacedGalera:
    """Three nodes, one per namespace of `nodes`; `stop()` kills whatever still runs."""

    def __init__(self, nodes: list[Node], workdir: Path) -> None:
        addresses = [node.address for node in nodes]
        self.nodes = [NamespacedGaleraNode(node, workdir / node.name, addresses) for node in nodes]

    def start(self) -> None:
        first, *others = self.nodes
        first.initialise()
        first.start(new_cluster=True)
        self.wait(lambda: first.synced(1), "the first node")
        for count, node in enumerate(others, 2):  # one at a time: a donor serves one rsync transfer
            node.start()
            self.wait(lambda count=count: all(n.synced(count) for n in self.nodes[:count]), f"{count} nodes Synced")

    def wait(self, done, what: str, timeout: float = FORM_TIMEOUT) -> float:
        """Poll until `done()`; the seconds it took. TimeoutError, with the nodes' log tails, after `timeout`."""
        started = time.monotonic()
        while not done():
            if time.monotonic() - started > timeout:
                tails = [(n.dir / "error.log").read_text(errors="replace")[-1500:] for n in self.nodes]
                raise TimeoutError(f"waited {timeout} s for {what}:\n" + "\n---\n".join(tails))
            time.sleep(0.2)
        return time.monotonic() - started

    def stop(self) -> None:
        for node in self.nodes:
            node.kill()
