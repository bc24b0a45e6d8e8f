"""Private throw-away MariaDB and PostgreSQL servers that a test may stop, crash and start again."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_binary(name: str) -> str | None:
    """A PostgreSQL program of the newest server installed under /usr/lib/postgresql, else on PATH."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


class PrivateServer:
    """One server in a temporary directory, on a free port; `stop(crash=True)` ends it like a power cut would."""

    backend = ""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.port = free_port()

    @classmethod
    def missing(cls) -> str | None:
        """Why this machine cannot run one, or None."""
        raise NotImplementedError

    def url(self, database: str) -> str:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def stop(self, crash: bool = False) -> None:
        raise NotImplementedError

    def execute(self, sql: str, database: str | None = None) -> list[tuple]:
        raise NotImplementedError

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                self.execute("SELECT 1")
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def create_database(self, name: str) -> None:
        """An empty database with the app's tables, migrated by a child process pointed at this server."""
        self.execute(f"CREATE DATABASE {name}")
        env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="tests.settings",
            SEGMENT_SEQ_TEST_DB=self.backend,
            SEGMENT_SEQ_TEST_DB_NAME=name,
            PYTHONPATH=str(ROOT),
            **{f"SEGMENT_SEQ_TEST_{self.backend.upper()}_URL": self.url(name)},
        )
        subprocess.run(
            [sys.executable, "-m", "django", "migrate", "--run-syncdb", "--verbosity", "0"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )


class MariaDBServer(PrivateServer):
    backend = "mariadb"

    @classmethod
    def missing(cls) -> str | None:
        for binary in ("mariadb-install-db", "mariadbd"):
            if not shutil.which(binary) and not os.path.exists(f"/usr/sbin/{binary}"):
                return f"{binary} is not installed"
        return None

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.process: subprocess.Popen[bytes] | None = None
        subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={self.dir / 'data'}",
                "--skip-test-db",
                "--auth-root-authentication-method=normal",
                *self._user(),
            ],
            check=True,
            capture_output=True,
        )

    @staticmethod
    def _user() -> list[str]:
        return ["--user=root"] if os.geteuid() == 0 else []

    def url(self, database: str) -> str:
        return f"mysql://root@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        binary = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        self.process = subprocess.Popen(
            [
                binary,
                "--no-defaults",
                f"--datadir={self.dir / 'data'}",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--socket={self.dir / 'sock'}",
                f"--pid-file={self.dir / 'pid'}",
                f"--log-error={self.dir / 'error.log'}",
                "--skip-grant-tables",
                "--innodb-buffer-pool-size=16M",
                "--skip-log-bin",
                *self._user(),
            ],
        )
        self.wait_until_up()

    def stop(self, crash: bool = False) -> None:
        if self.process is None:
            return
        if crash:
            self.process.kill()
        else:
            self.process.terminate()
        self.process.wait(START_TIMEOUT)
        self.process = None

    def execute(self, sql: str, database: str | None = None) -> list[tuple]:
        return mariadb_execute(self.port, sql, database)


def mariadb_execute(port: int, sql: str, database: str | None = None, timeout: int = 3) -> list[tuple]:
    """One statement as root on a MariaDB server of the tests' own, on a connection of its own, committed."""
    import MySQLdb  # installed wherever the MariaDB tests run; the other backends' jobs never call this

    conn = MySQLdb.connect(host="127.0.0.1", port=port, user="root", db=database or "", connect_timeout=timeout)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        rows = list(cursor.fetchall())
        conn.commit()
        return rows
    finally:
        conn.close()


class PostgresServer(PrivateServer):
    backend = "postgres"

    @classmethod
    def missing(cls) -> str | None:
        if not cls._bin("initdb"):
            return "initdb was not found under /usr/lib/postgresql/*/bin"
        if os.geteuid() == 0 and not shutil.which("runuser"):
            return "running as root and runuser is not installed (PostgreSQL refuses to run as root)"
        return None

    @staticmethod
    def _bin(name: str) -> str | None:
        return postgres_binary(name)

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self._run("initdb", "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres", "--no-sync")

    def _run(self, name: str, *args: str) -> None:
        command = [self._bin(name) or name, *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, cwd=self.dir)

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-o", options, "-l", str(self.dir / "log"), "-w", "start")
        self.wait_until_up()

    def stop(self, crash: bool = False) -> None:
        mode = "immediate" if crash else "fast"
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", mode, "-w", "stop")

    def execute(self, sql: str, database: str | None = None) -> list[tuple]:
        import psycopg

        dsn = f"host=127.0.0.1 port={self.port} user=postgres dbname={database or 'postgres'}"
        with psycopg.connect(dsn, connect_timeout=3, autocommit=True) as conn:
            cursor = conn.execute(sql)
            return list(cursor.fetchall()) if cursor.description else []


SERVERS: dict[str, type[PrivateServer]] = {"mariadb": MariaDBServer, "postgres": PostgresServer}
