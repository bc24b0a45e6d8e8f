"""A PostgreSQL primary with a streaming standby on loopback ports of their own, for failover tests.

The primary can be crashed like a power cut (SIGKILL of every process) and the standby promoted; its WAL sender
can be stopped first, so the standby falls behind by as long as a test wants, as an asynchronous one can.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.support.servers import START_TIMEOUT, PostgresServer, PrivateServer

STANDBY_NAME = "standby1"


class Primary(PostgresServer):
    """A primary that streams WAL; `synchronous` makes every commit wait for the standby."""

    def __init__(self, workdir: Path, synchronous: bool) -> None:
        super().__init__(workdir)
        self.synchronous = synchronous

    def start(self) -> None:
        sync = STANDBY_NAME if self.synchronous else ""
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c wal_level=replica "
            f"-c max_wal_senders=4 -c synchronous_standby_names='{sync}'"
        )
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-o", options, "-l", str(self.dir / "log"), "-w", "start")
        self.wait_until_up()

    def pids(self) -> list[int]:
        """The postmaster and every process it started."""
        postmaster = int((self.dir / "data" / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
        return [postmaster, *map(int, children)]

    def pause_replication(self) -> None:
        """Stop the WAL sender (SIGSTOP): commits go on here and no longer reach the standby."""
        for (pid,) in self.execute("SELECT pid FROM pg_stat_replication"):
            os.kill(pid, signal.SIGSTOP)

    def committed(self, database: str, sql: str) -> tuple[str, list[tuple]]:
        """Where its WAL stands (every commit so far is before it) and the answer of `sql`: read just before a
        crash, what the standby must have to have lost nothing."""
        ((position,),) = self.execute("SELECT pg_current_wal_lsn()::text")
        return position, self.execute(sql, database)

    def crash(self) -> None:
        """SIGKILL every process of the server at once, as a power cut would end them."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


class Standby(PostgresServer):
    """A streaming standby made from the primary by pg_basebackup."""

    def __init__(self, workdir: Path, primary: Primary) -> None:
        PrivateServer.__init__(self, workdir)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self._run(
            "pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
            "-D", str(self.dir / "data"), "-R", "-X", "stream", "-c", "fast", "--no-sync",
        )  # fmt: skip

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            f"-c cluster_name={STANDBY_NAME} -c hot_standby=on"
        )
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-o", options, "-l", str(self.dir / "log"), "-w", "start")
        self.wait_until_up()

    def received(self, database: str, sql: str, primary_position: str) -> tuple[int, list[tuple]]:
        """How many bytes of WAL short of `primary_position` it stands once it has replayed what it received, and
        the answer of `sql` then: what a promotion would start from."""
        deadline = time.monotonic() + START_TIMEOUT
        while self.execute("SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()") == [(True,)]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby did not replay what it received in {START_TIMEOUT} s")
            time.sleep(0.01)
        ((behind,),) = self.execute(f"SELECT pg_wal_lsn_diff('{primary_position}', pg_last_wal_replay_lsn())::bigint")
        return int(behind), self.execute(sql, database)

    def promote(self) -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-w", "-t", str(START_TIMEOUT), "promote")


class StandbyPair:
    """A primary and its standby, started; `stop()` ends whatever still runs."""

    def __init__(self, workdir: Path, synchronous: bool) -> None:
        (workdir / "primary").mkdir()
        (workdir / "standby").mkdir()
        self.primary = Primary(workdir / "primary", synchronous)
        self.primary.start()
        self.standby = Standby(workdir / "standby", self.primary)
        self.standby.start()
        self.wait_streaming()

    def wait_streaming(self) -> None:
        """Until the standby streams (and, when synchronous, is the synchronous one)."""
        wanted = "sync" if self.primary.synchronous else "async"
        deadline = time.monotonic() + START_TIMEOUT
        while [row[0] for row in self.primary.execute("SELECT sync_state FROM pg_stat_replication")] != [wanted]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby did not start streaming ({wanted}) in {START_TIMEOUT} s")
            time.sleep(0.1)

    def wait_caught_up(self) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        ((position,),) = self.primary.execute("SELECT pg_current_wal_lsn()::text")
        deadline = time.monotonic() + START_TIMEOUT
        while self.standby.execute(f"SELECT pg_last_wal_replay_lsn() >= '{position}'") != [(True,)]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby did not catch up with the primary in {START_TIMEOUT} s")
            time.sleep(0.01)

    @property
    def hosts(self) -> str:
        return "127.0.0.1,127.0.0.1"

    @property
    def ports(self) -> str:
        return f"{self.primary.port},{self.standby.port}"

    def stop(self) -> None:
        for server in (self.primary, self.standby):
            if (server.dir / "data" / "postmaster.pid").exists():
                if isinstance(server, Primary):
                    server.crash()
                else:
                    with contextlib.suppress(subprocess.CalledProcessError):
                        server.stop(crash=True)
