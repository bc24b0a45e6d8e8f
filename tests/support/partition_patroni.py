"""etcd and two Patroni members (synchronous_mode) inside the network namespaces of tests/support/netns.py.

Each runs in a namespace of its own, listening on that namespace's address; the test process, outside them, asks
each member's PostgreSQL through its Unix socket whether it is in recovery, which is all it needs to tell a leader
from a replica, and a demoted leader from one still taking writes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.support.netns import SUBNET, Node
from tests.support.patroni import (
    Listening,
    as_postgres,
    kill_group,
    kill_postmaster,
    member_config,
    patroni_binary,
    postgres_bin_dir,
)

PG_PORT, REST_PORT, ETCD_CLIENT, ETCD_PEER = 5432, 8008, 2379, 2380
START_TIMEOUT = 120
TRUST = [
    "local all all trust",
    f"host all all {SUBNET}.0/24 trust",
    f"host replication all {SUBNET}.0/24 trust",
]


class NamespacedMember:
    """One Patroni member in `node`'s namespace; `dir` holds its configuration, data, socket and log."""

    def __init__(self, node: Node, workdir: Path, etcd: str) -> None:
        self.node = node
        self.dir = workdir
        self.dir.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self.process: subprocess.Popen[bytes] | None = None
        (self.dir / "patroni.yml").write_text(json.dumps(self.config(etcd, postgres_bin_dir() or "")))

    def config(self, etcd: str, bin_dir: str) -> dict[str, object]:
        postgresql = {
            "parameters": {
                "unix_socket_directories": str(self.dir),
                "fsync": "off",
                # A client gone silent is found out within seconds, and the locks its session held freed.
                "tcp_keepalives_idle": 1,
                "tcp_keepalives_interval": 1,
                "tcp_keepalives_count": 2,
                "tcp_user_timeout": 3000,
            },
        }
        where = Listening(self.node.name, self.node.address, REST_PORT, PG_PORT, self.dir, self.dir / "data")
        return member_config(where, etcd, bin_dir, TRUST, postgresql)

    def start(self) -> None:
        patroni = patroni_binary()
        assert patroni
        with (self.dir / "patroni.out").open("ab") as log:
            self.process = subprocess.Popen(
                self.node.command(as_postgres([patroni, str(self.dir / "patroni.yml")])),
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.dir,
            )  # fmt: skip

    def execute(self, sql: str, database: str = "postgres") -> list[tuple]:
        import psycopg

        dsn = f"host={self.dir} port={PG_PORT} user=postgres dbname={database}"
        with psycopg.connect(dsn, connect_timeout=3, autocommit=True) as conn:
            cursor = conn.execute(sql)
            return list(cursor.fetchall()) if cursor.description else []

    def role(self) -> str:
        """ "primary" (takes writes), "replica" (in recovery) or "down" (does not answer through its socket)."""
        try:
            ((recovering,),) = self.execute("SELECT pg_is_in_recovery()")
        except Exception:  # noqa: BLE001 - stopped, restarting, or not up yet
            return "down"
        return "replica" if recovering else "primary"

    def stop(self) -> None:
        if self.process is not None:
            kill_group(self.process)
            self.process = None
        kill_postmaster(self.dir / "data")


class NamespacedPatroni:
    """etcd in one namespace and a member in each of two others; `stop()` kills every process started."""

    def __init__(self, etcd: Node, members: list[Node], workdir: Path) -> None:
        self.etcd_node = etcd
        self.dir = workdir
        self.etcd: subprocess.Popen[bytes] | None = None
        url = f"{etcd.address}:{ETCD_CLIENT}"
        self.members = [NamespacedMember(node, workdir / node.name, url) for node in members]

    def start(self) -> None:
        client, peer = f"http://{self.etcd_node.address}:{ETCD_CLIENT}", f"http://{self.etcd_node.address}:{ETCD_PEER}"
        with (self.dir / "etcd.log").open("wb") as log:
            self.etcd = subprocess.Popen(
                self.etcd_node.command(
                    ["etcd", "--name=segseq", f"--data-dir={self.dir / 'etcd'}", f"--listen-client-urls={client}",
                     f"--advertise-client-urls={client}", f"--listen-peer-urls={peer}",
                     f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=segseq={peer}",
                     "--initial-cluster-state=new"]
                ),
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        for member in self.members:
            member.start()
        self.wait(self.synchronous, "a leader and its synchronous standby")

    def synchronous(self) -> bool:
        """One member takes writes, and the other streams from it as its synchronous standby."""
        leaders = [member for member in self.members if member.role() == "primary"]
        if len(leaders) != 1:
            return False
        try:
            return leaders[0].execute("SELECT sync_state FROM pg_stat_replication") == [("sync",)]
        except Exception:  # noqa: BLE001 - restarting
            return False

    def leader(self) -> NamespacedMember:
        (found,) = [member for member in self.members if member.role() == "primary"]
        return found

    def wait(self, done, what: str, timeout: float = START_TIMEOUT) -> float:
        """Poll until `done()`; the seconds it took. TimeoutError with the logs' tails after `timeout`."""
        started = time.monotonic()
        while not done():
            if time.monotonic() - started > timeout:
                logs = [(self.dir / "etcd.log").read_text(errors="replace")[-1000:]]
                logs += [(m.dir / "patroni.out").read_text(errors="replace")[-2000:] for m in self.members]
                raise TimeoutError(f"waited {timeout} s for {what}:\n" + "\n---\n".join(logs))
            time.sleep(0.1)
        return time.monotonic() - started

    def stop(self) -> None:
        for member in self.members:
            member.stop()
        if self.etcd is not None:
            kill_group(self.etcd)
            self.etcd = None
