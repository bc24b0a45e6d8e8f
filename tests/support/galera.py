"""A three-node MariaDB Galera cluster on loopback ports of its own, for the multi-primary and node-loss tests.

Each node reads only its own --defaults-file (never /etc/mysql), runs as the mysql user in a process group of
its own, and can be killed with SIGKILL and started again (it rejoins by IST, or rsync SST). `stop()` kills
every group still running; it is also registered with atexit, so an interrupted run leaves no server behind.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.support.servers import ROOT, mariadb_execute

PROVIDER = "/usr/lib/galera/libgalera_smm.so"
# Loopback ports: SQL, group communication, incremental state transfer and full state transfer, per node.
SQL_PORTS = (4401, 4402, 4403)
GMCAST_PORTS = (4571, 4572, 4573)
IST_PORTS = (4581, 4582, 4583)
SST_PORTS = (4591, 4592, 4593)
CLUSTER_NAME = "segment_seq_tests"
# The whole cluster formed (three nodes, each Synced): about 15 s measured on the 2-core machine.
FORM_TIMEOUT = 90
# A killed node back and Synced (IST): a few seconds measured.
REJOIN_TIMEOUT = 60
USER = "mysql"

# A node's server configuration, on loopback here and at a namespace's address in the partition tests.
CONFIG = """\
[mysqld]
datadir={datadir}
port={port}
bind-address={address}
socket={dir}/sock
pid-file={dir}/pid
log-error={dir}/error.log
user={user}
skip-grant-tables
skip-name-resolve
innodb_buffer_pool_size=32M
innodb_log_file_size=16M
innodb_flush_log_at_trx_commit=0
performance_schema=OFF
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider={provider}
wsrep_cluster_name={cluster}
wsrep_cluster_address=gcomm://{peers}
wsrep_node_name={name}
wsrep_node_address={address}
wsrep_node_incoming_address={address}:{port}
wsrep_provider_options="gmcast.listen_addr=tcp://{address}:{gmcast};ist.recv_addr={address}:{ist};gcache.size=32M"
wsrep_sst_method=rsync
wsrep_sst_receive_address={address}:{sst}
wsrep_slave_threads=2
"""


def missing() -> str | None:
    """Why this machine cannot run the cluster, or None."""
    for binary in ("mariadbd", "mariadb-install-db", "rsync", "wsrep_sst_rsync"):
        if not shutil.which(binary) and not os.path.exists(f"/usr/sbin/{binary}"):
            return f"{binary} is not installed"
    if not os.path.exists(PROVIDER):
        return f"the Galera provider {PROVIDER} is not installed (Debian's galera-4)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(USER)
        except KeyError:
            return f"there is no {USER} user to run the servers as"
    for port in (*SQL_PORTS, *GMCAST_PORTS, *IST_PORTS, *SST_PORTS):
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return f"port {port} is taken (another Galera test cluster running?)"
    return None


def install_datadir(datadir: Path) -> None:
    """A fresh datadir with MariaDB's system tables, owned by the server's user; within a bound, not a hang."""
    subprocess.run(
        ["mariadb-install-db", "--no-defaults", f"--datadir={datadir}", "--skip-test-db",
         "--auth-root-authentication-method=normal", f"--user={USER}"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip


class Node:
    """One node: its directory, defaults file and process (a group of its own)."""

    def __init__(self, workdir: Path, index: int) -> None:
        self.index = index
        self.dir = workdir / f"node{index}"
        self.dir.mkdir()
        self.datadir = self.dir / "data"
        self.port = SQL_PORTS[index - 1]
        self.process: subprocess.Popen[bytes] | None = None
        self.config = self.dir / "my.cnf"
        self.config.write_text(
            CONFIG.format(
                datadir=self.datadir,
                address="127.0.0.1",
                port=self.port,
                dir=self.dir,
                user=USER,
                provider=PROVIDER,
                cluster=CLUSTER_NAME,
                peers=",".join(f"127.0.0.1:{port}" for port in GMCAST_PORTS),
                name=f"node{index}",
                gmcast=GMCAST_PORTS[index - 1],
                ist=IST_PORTS[index - 1],
                sst=SST_PORTS[index - 1],
            )
        )
        self._own(self.dir)

    @staticmethod
    def _own(path: Path) -> None:
        if os.geteuid() == 0:
            shutil.chown(path, USER, USER)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def initialise(self) -> None:
        """A fresh datadir with the system tables: the first node's; the others get theirs by state transfer."""
        install_datadir(self.datadir)

    def start(self, new_cluster: bool = False) -> None:
        if not self.datadir.exists():
            self.datadir.mkdir()
            self._own(self.datadir)
        binary = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        command = [binary, f"--defaults-file={self.config}", *(["--wsrep-new-cluster"] if new_cluster else [])]
        log = open(self.dir / "stdout.log", "ab")  # noqa: SIM115 - the server's, closed with the process
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def kill(self) -> None:
        """SIGKILL the node's whole process group (the server and any state transfer it runs), as a crash would."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self.process = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def execute(self, sql: str, database: str | None = None, timeout: int = 3) -> list[tuple]:
        return mariadb_execute(self.port, sql, database, timeout)

    def status(self) -> dict[str, str]:
        rows = self.execute(
            "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN "
            "('WSREP_CLUSTER_SIZE', 'WSREP_LOCAL_STATE_COMMENT', 'WSREP_READY', 'WSREP_CLUSTER_STATUS')"
        )
        return {name.lower(): str(value) for name, value in rows}

    def synced(self, size: int) -> bool:
        try:
            status = self.status()
        except Exception:  # noqa: BLE001 - not up yet
            return False
        return (
            status.get("wsrep_local_state_comment") == "Synced"
            and status.get("wsrep_cluster_size") == str(size)
            and status.get("wsrep_ready") == "ON"
        )

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = (self.dir / "error.log").read_text(errors="replace")
        except OSError:
            return "(no error log)"
        return "\n".join(text.splitlines()[-lines:])


class GaleraCluster:
    """Three nodes, started and Synced; `stop()` kills whatever still runs and removes the directory."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.nodes = [Node(workdir, index) for index in (1, 2, 3)]
        atexit.register(self.stop)

    def start(self) -> None:
        first, *others = self.nodes
        first.initialise()
        first.start(new_cluster=True)
        self.wait_synced([first], 1, FORM_TIMEOUT)
        for node in others:  # one at a time: two rsync transfers at once from one donor are refused
            node.start()
            self.wait_synced([first, node], self.nodes.index(node) + 1, FORM_TIMEOUT)
        self.wait_synced(self.nodes, 3, FORM_TIMEOUT)

    def wait_synced(self, nodes: list[Node], size: int, timeout: float) -> float:
        """Until every node of `nodes` is Synced in a cluster of `size`; the seconds it took. Fails after `timeout`."""
        started = time.monotonic()
        deadline = started + timeout
        while not all(node.synced(size) for node in nodes):
            dead = [node for node in nodes if not node.alive()]
            if dead or time.monotonic() > deadline:
                why = "exited" if dead else f"is not Synced in a cluster of {size} after {timeout} s"
                node = (dead or [n for n in nodes if not n.synced(size)])[0]
                raise TimeoutError(f"Galera node{node.index} {why}; its log ends:\n{node.log_tail()}")
            time.sleep(0.2)
        return time.monotonic() - started

    def url(self, node: Node, database: str) -> str:
        return f"mysql://root@{node.address}/{database}"

    def create_database(self, name: str) -> None:
        """An empty database with the app's tables, migrated by a child process pointed at the first node."""
        self.nodes[0].execute(f"CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
        env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="tests.settings",
            SEGMENT_SEQ_TEST_DB="mariadb",
            SEGMENT_SEQ_TEST_DB_NAME=name,
            PYTHONPATH=str(ROOT),
            SEGMENT_SEQ_TEST_MARIADB_URL=self.url(self.nodes[0], name),
        )
        subprocess.run(
            [sys.executable, "-m", "django", "migrate", "--run-syncdb", "--verbosity", "0"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            timeout=180,
        )

    def stop(self) -> None:
        for node in self.nodes:
            node.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
