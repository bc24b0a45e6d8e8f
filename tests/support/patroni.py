"""A Patroni cluster on loopback ports of its own: etcd and two PostgreSQL members with synchronous_mode on.

Patroni elects the leader and promotes the synchronous standby when the leader's lease in etcd runs out,
as a production set-up would. Patroni is found through SEGMENT_SEQ_PATRONI (the path of its `patroni`
script), else on PATH; install it into a virtualenv of its own (`pip install 'patroni[etcd3]' psycopg2-binary`).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# Loopback ports of this cluster's own, apart from the shared servers on 3306 and 5432.
ETCD_CLIENT_PORT = 23791
ETCD_PEER_PORT = 23801
MEMBER_PORTS = ((5451, 8451), (5452, 8452))  # (PostgreSQL, Patroni REST API) per member
SCOPE = "segseq"
# The shortest lease Patroni accepts (ttl 20); loop_wait + 2 * retry_timeout must stay within it.
TTL, LOOP_WAIT, RETRY_TIMEOUT = 20, 1, 5
START_TIMEOUT = 90


def patroni_binary() -> str | None:
    return os.environ.get("SEGMENT_SEQ_PATRONI") or shutil.which("patroni")


def postgres_bin_dir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return os.path.dirname(found[-1]) if found else None


def missing() -> str | None:
    """Why this machine cannot run the cluster, or None."""
    problem = missing_programs()
    if problem:
        return problem
    for port in (ETCD_CLIENT_PORT, ETCD_PEER_PORT, *(p for pair in MEMBER_PORTS for p in pair)):
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return f"port {port} is taken (another Patroni test running?)"
    return None


def missing_programs() -> str | None:
    """Why this machine lacks what a Patroni cluster needs (Patroni, etcd, PostgreSQL, setpriv), or None."""
    patroni = patroni_binary()
    if not patroni or not os.access(patroni, os.X_OK):
        return "Patroni was not found (set SEGMENT_SEQ_PATRONI to its `patroni` script, or put it on PATH)"
    if not shutil.which("etcd"):
        return "etcd is not installed (Debian: apt-get install etcd-server)"
    if not postgres_bin_dir():
        return "PostgreSQL was not found under /usr/lib/postgresql/*/bin"
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        return "running as root and setpriv is not installed (PostgreSQL refuses to run as root)"
    try:  # its interpreter must be one the postgres user may run (not a pyenv build under /root)
        subprocess.run(as_postgres([patroni, "--version"]), check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{patroni} does not run as the postgres user: {exc}"
    return None


def as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root; setpriv execs in place, so the process started is the command itself."""
    if os.geteuid() != 0:
        return command
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", *command]


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)


def kill_postmaster(data: Path) -> None:
    """SIGKILL the postmaster of `data` and its children: Patroni starts PostgreSQL in a session of its own."""
    try:
        postmaster = int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return
    children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
    for pid in [postmaster, *map(int, children)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def reap_when_orphaned(parent: int, workdir: Path) -> None:
    """Run apart from the test process: once it is gone (SIGKILLed, say), kill what it started in `workdir`.

    A session fixture's finalizer never runs when pytest itself is killed, and the leftovers would hold the
    cluster's fixed ports.
    """
    while os.getppid() == parent:
        time.sleep(0.5)
    for line in (workdir / "groups").read_text().split() if (workdir / "groups").exists() else []:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.killpg(int(line), signal.SIGKILL)
    for data in workdir.glob("member*/data"):
        kill_postmaster(data)


@dataclass(frozen=True)
class Listening:
    """Where one Patroni member listens and keeps its files."""

    name: str
    address: str
    rest_port: int
    pg_port: int
    dir: Path
    data: Path


def member_config(
    where: Listening, etcd: str, bin_dir: str, trust: list[str], postgresql: dict[str, object]
) -> dict[str, object]:
    """A member's Patroni configuration, the same cluster settings wherever it listens (on loopback here, at a
    namespace's address in the partition tests); `postgresql` adds to its postgresql section."""
    return {
        "scope": SCOPE,
        "name": where.name,
        "restapi": {
            "listen": f"{where.address}:{where.rest_port}",
            "connect_address": f"{where.address}:{where.rest_port}",
        },
        "etcd3": {"hosts": [etcd]},
        "bootstrap": {
            "dcs": {
                "ttl": TTL,
                "loop_wait": LOOP_WAIT,
                "retry_timeout": RETRY_TIMEOUT,
                "synchronous_mode": True,
                "postgresql": {"use_pg_rewind": True, "parameters": {"max_connections": 100}},
            },
            "initdb": [{"auth": "trust"}, "no-sync"],
            "pg_hba": trust,
        },
        "postgresql": {
            "listen": f"{where.address}:{where.pg_port}",
            "connect_address": f"{where.address}:{where.pg_port}",
            "data_dir": str(where.data),
            "bin_dir": bin_dir,
            "pgpass": str(where.dir / "pgpass"),
            "authentication": {"superuser": {"username": "postgres"}, "replication": {"username": "postgres"}},
            "pg_hba": trust,
            **postgresql,
        },
    }


@dataclass
class Member:
    """One Patroni member: its own process group, and the postmaster it starts (in a session of its own)."""

    name: str
    port: int
    rest_port: int
    dir: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def data(self) -> Path:
        return self.dir / "data"

    def config(self, etcd: str, bin_dir: str) -> str:
        """Patroni's YAML; JSON is YAML, so no YAML library is needed here."""
        trust = [
            "local all all trust",
            "host all all 127.0.0.1/32 trust",
            "host replication all 127.0.0.1/32 trust",
        ]
        postgresql = {
            # A crashed leader rejoins as a standby: rewound, or copied again if that fails.
            "remove_data_directory_on_rewind_failure": True,
            "remove_data_directory_on_diverged_timelines": True,
            "parameters": {"unix_socket_directories": str(self.dir), "fsync": "off"},
        }
        where = Listening(self.name, "127.0.0.1", self.rest_port, self.port, self.dir, self.data)
        return json.dumps(member_config(where, etcd, bin_dir, trust, postgresql))

    def start(self, patroni: str) -> subprocess.Popen[bytes]:
        with (self.dir / "patroni.out").open("ab") as log:  # a restart adds to it
            self.process = subprocess.Popen(
                as_postgres([patroni, str(self.dir / "patroni.yml")]),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a process group of its own, killed whole at the end
                cwd=self.dir,
            )
        return self.process

    def crash(self) -> None:
        """SIGKILL Patroni and then every PostgreSQL process of this member, as a power cut would end them."""
        if self.process is not None:
            kill_group(self.process)
        kill_postmaster(self.data)

    def status(self) -> dict[str, object] | None:
        """What Patroni's REST API says of this member (role, state), or None if it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.rest_port}/patroni", timeout=2) as response:
                return dict(json.load(response))
        except urllib.error.HTTPError as exc:  # 503 when not the leader: the body still says what it is
            return dict(json.load(exc))
        except (OSError, ValueError):
            return None

    def is_writable_leader(self) -> bool:
        status = self.status()
        return status is not None and status.get("role") in ("primary", "master") and status.get("state") == "running"

    def takes_writes(self) -> bool:
        """Whether this member's postgres itself is out of recovery: what libpq's read-write connection asks, so no
        caller can write before it says so (Patroni's REST API says it a moment after, or later on a loaded machine)."""
        import psycopg

        dsn = f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres connect_timeout=2"
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                row = conn.execute("SELECT NOT pg_is_in_recovery()").fetchone()
        except psycopg.Error:
            return False
        return row is not None and bool(row[0])


class PatroniCluster:
    """etcd and two Patroni members in `workdir`; `stop()` ends every process started, whatever state it is in."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.etcd: subprocess.Popen[bytes] | None = None
        self.reaper: subprocess.Popen[bytes] | None = None
        self.members = [
            Member(f"member{index}", port, rest, workdir / f"member{index}")
            for index, (port, rest) in enumerate(MEMBER_PORTS, 1)
        ]

    @property
    def hosts(self) -> str:
        return ",".join("127.0.0.1" for _ in self.members)

    @property
    def ports(self) -> str:
        return ",".join(str(member.port) for member in self.members)

    def start(self) -> None:
        patroni, bin_dir = patroni_binary(), postgres_bin_dir()
        assert patroni and bin_dir, missing()
        self.reaper = subprocess.Popen(
            [sys.executable, __file__, str(os.getpid()), str(self.dir)], start_new_session=True
        )
        self.start_etcd()
        for member in self.members:
            member.dir.mkdir()
            if os.geteuid() == 0:
                shutil.chown(member.dir, "postgres", "postgres")
            (member.dir / "patroni.yml").write_text(member.config(f"127.0.0.1:{ETCD_CLIENT_PORT}", bin_dir))
            self.note_group(member.start(patroni))
        self.wait_synchronous()

    def note_group(self, proc: subprocess.Popen[bytes]) -> None:
        """For the reaper: each process group started (their leaders were started with a session of their own)."""
        with (self.dir / "groups").open("a") as fh:
            fh.write(f"{proc.pid}\n")

    def start_etcd(self) -> None:
        client, peer = f"http://127.0.0.1:{ETCD_CLIENT_PORT}", f"http://127.0.0.1:{ETCD_PEER_PORT}"
        with (self.dir / "etcd.log").open("wb") as log:
            self.etcd = subprocess.Popen(
                [
                    "etcd",
                    "--name=segseq",
                    f"--data-dir={self.dir / 'etcd'}",
                    f"--listen-client-urls={client}",
                    f"--advertise-client-urls={client}",
                    f"--listen-peer-urls={peer}",
                    f"--initial-advertise-peer-urls={peer}",
                    f"--initial-cluster=segseq={peer}",
                    "--initial-cluster-state=new",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.note_group(self.etcd)
        self.wait(lambda: self.get_json(f"{client}/health").get("health") == "true", "etcd to answer")

    @staticmethod
    def get_json(url: str) -> dict[str, object]:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return dict(json.load(response))
        except (OSError, ValueError):
            return {}

    def wait(self, done: Callable[[], bool], what: str, timeout: float = START_TIMEOUT) -> float:
        """Poll `done()` until true; a timeout fails with the members' logs' tails, never hangs. Returns when the
        last check that found it not done began: what it waits for came after that instant (time.monotonic())."""
        started = time.monotonic()
        deadline, not_yet = started + timeout, started
        while True:
            asked = time.monotonic()
            if done():
                return not_yet
            not_yet = asked
            for proc, name in [(self.etcd, "etcd")] + [(m.process, m.name) for m in self.members]:
                if proc is not None and proc.poll() is not None:  # crashed members have no process left
                    raise RuntimeError(f"{name} exited ({proc.returncode}) while waiting for {what}\n{self.logs()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout:.0f} s for {what}\n{self.logs()}")
            time.sleep(0.2)

    def cluster_status(self) -> dict[str, object]:
        """Patroni's view of the whole cluster, asked of whichever member answers."""
        for member in self.members:
            if member.process is not None:
                found = self.get_json(f"http://127.0.0.1:{member.rest_port}/cluster")
                if found:
                    return found
        return {}

    def roles(self) -> dict[str, tuple[str, str]]:
        """Each member's (role, state) as Patroni reports them, e.g. {"member1": ("leader", "running")}."""
        members = self.cluster_status().get("members") or []
        assert isinstance(members, list)
        return {m["name"]: (m.get("role", ""), m.get("state", "")) for m in members}

    def wait_synchronous(self, timeout: float = START_TIMEOUT) -> None:
        """Until one member leads and the other is its synchronous standby, streaming."""

        def ready() -> bool:
            roles = sorted(role for role, state in self.roles().values() if state in ("running", "streaming"))
            return roles == ["leader", "sync_standby"]

        self.wait(ready, "a leader and a synchronous standby", timeout)

    def leader(self) -> Member:
        for member in self.members:
            if self.roles().get(member.name, ("", ""))[0] == "leader":
                return member
        raise LookupError(f"no leader: {self.roles()}")

    def crash(self, member: Member) -> None:
        member.crash()
        member.process = None

    def ensure_healthy(self) -> None:
        """Start again the members a test crashed, and wait until they are a leader and its synchronous standby."""
        patroni = patroni_binary()
        assert patroni
        for member in self.members:
            if member.process is None:
                self.note_group(member.start(patroni))
        self.wait_synchronous()

    def execute(self, sql: str, database: str = "postgres") -> list[tuple[object, ...]]:
        """A statement on the leader, found the way the app finds it: libpq's multi-host read-write connection."""
        import psycopg  # the test suite's driver; this module is also imported to check for `missing()` alone

        dsn = (
            f"host={self.hosts} port={self.ports} user=postgres dbname={database} "
            "target_session_attrs=read-write connect_timeout=3"
        )
        with psycopg.connect(dsn, autocommit=True) as conn:
            cursor = conn.execute(sql)
            return list(cursor.fetchall()) if cursor.description else []

    def logs(self, tail: int = 2000) -> str:
        parts = []
        for path in [self.dir / "etcd.log", *(m.dir / "patroni.out" for m in self.members)]:
            with contextlib.suppress(OSError):
                parts.append(f"--- {path.name} ({path.parent.name}) ---\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        """SIGKILL everything: the members' process groups, their postmasters, and etcd."""
        for member in self.members:
            member.crash()
            member.process = None
        if self.etcd is not None:
            kill_group(self.etcd)
            self.etcd = None
        if self.reaper is not None:
            kill_group(self.reaper)
            self.reaper = None


if __name__ == "__main__":
    reap_when_orphaned(int(sys.argv[1]), Path(sys.argv[2]))
