"""PostgreSQL servers inside the network namespaces of tests/support/netns.py: a primary and its streaming standby,
each listening on its namespace's address (port 5432, every namespace has its own) and on a Unix socket in its
folder, through which the test process, outside the namespaces, asks them what it needs to know.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.support.netns import SUBNET, Node
from tests.support.servers import START_TIMEOUT, postgres_binary

PORT = 5432
TRUST = f"host all all {SUBNET}.0/24 trust\nhost replication all {SUBNET}.0/24 trust\n"


class NamespacedPostgres:
    """One PostgreSQL server run as postgres inside `node`'s namespace; `dir` holds its data, socket and log."""

    def __init__(self, node: Node, workdir: Path) -> None:
        self.node = node
        self.dir = workdir
        self.dir.mkdir()
        os.chmod(self.dir, 0o755)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")

    def run(self, name: str, *args: str) -> None:
        """A PostgreSQL program, as postgres, inside the namespace; it must succeed within START_TIMEOUT."""
        command = [postgres_binary(name) or name, *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(
            self.node.command(command), capture_output=True, text=True, cwd=self.dir, timeout=START_TIMEOUT
        )
        if done.returncode != 0:
            raise RuntimeError(f"{name} failed in {self.node.name}: {done.stderr[-2000:]}")

    def initdb(self) -> None:
        self.run("initdb", "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres", "--no-sync")
        with (self.dir / "data" / "pg_hba.conf").open("a") as fh:
            fh.write(TRUST)

    def base_backup(self, primary: NamespacedPostgres) -> None:
        """This server's data copied from `primary` over the namespaces' network, set up to stream from it."""
        self.run(
            "pg_basebackup", "-h", primary.node.address, "-p", str(PORT), "-U", "postgres",
            "-D", str(self.dir / "data"), "-R", "-X", "stream", "-c", "fast", "--no-sync",
        )  # fmt: skip

    def start(self) -> None:
        options = (
            f"-p {PORT} -k {self.dir} -c listen_addresses={self.node.address} -c fsync=off -c wal_level=replica "
            "-c max_wal_senders=4 -c hot_standby=on -c cluster_name=segseq "
            # A client gone silent (cut off) is found out within seconds, and the locks its session held freed.
            "-c tcp_keepalives_idle=1 -c tcp_keepalives_interval=1 -c tcp_keepalives_count=2 -c tcp_user_timeout=3000"
        )
        self.run("pg_ctl", "-D", str(self.dir / "data"), "-o", options, "-l", str(self.dir / "log"), "-w", "start")

    def execute(self, sql: str, database: str = "postgres") -> list[tuple]:
        """One statement through the Unix socket, from outside the namespaces, in autocommit."""
        import psycopg

        dsn = f"host={self.dir} port={PORT} user=postgres dbname={database}"
        with psycopg.connect(dsn, connect_timeout=3, autocommit=True) as conn:
            cursor = conn.execute(sql)
            return list(cursor.fetchall()) if cursor.description else []

    def promote(self) -> None:
        self.run("pg_ctl", "-D", str(self.dir / "data"), "-w", "-t", str(START_TIMEOUT), "promote")

    def crash(self) -> None:
        """SIGKILL the postmaster and every child of it."""
        try:
            postmaster = int((self.dir / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            return
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
        for pid in [postmaster, *map(int, children)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def wait_streaming(self, count: int = 1) -> None:
        """On a primary: until `count` standbys stream from it."""
        deadline = time.monotonic() + START_TIMEOUT
        while self.execute("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'") != [(count,)]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no standby streamed from {self.node.name} in {START_TIMEOUT} s")
            time.sleep(0.1)
