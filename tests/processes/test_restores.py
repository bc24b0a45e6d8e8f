"""A backup of the Sequence table restored with the usual tools, the app stopped or running: no number comes again.

pg_dump -Fc / pg_restore --clean and mysqldump --single-transaction / mysql < dump, each of which drops and re-creates
the table: the app sees another table than the one the row was last written in, or a row behind what a running
process wrote itself, and skips FAILOVER_SKIP. A data-only restore into the same table is invisible: `segment_seq
advance` moves the rows forward. Only the Sequence table of this run's test database is dumped and restored.
"""

from __future__ import annotations

import collections
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from django_segment_seq.conf import app_settings
from django_segment_seq.db.table import Sequence
from tests.conftest import ROOT

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
TOOLS = {"postgres": ("pg_dump", "pg_restore", "psql"), "mariadb": ("mysqldump", "mysql")}
TABLE = Sequence._meta.db_table
NAME = "ticket"  # next_value(), next_values() and saves of Ticket, whose code is unique
TIMEOUT = 60


@pytest.fixture(autouse=True)
def _tools() -> None:
    tools = TOOLS.get(settings.BACKEND)
    if tools is None:
        pytest.skip("SQLite: a restore is a file copy, with no server to tell the tables apart")
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        (pytest.fail if IN_CI else pytest.skip)(f"client tools missing: {', '.join(missing)}")


class Crew:
    """Worker processes (tests/support/restore_worker.py) taking numbers of one sequence, each into its own file."""

    def __init__(self, tmp_path: Path, **env: str) -> None:
        from tests.stress.run import worker_env

        self.tmp_path = tmp_path
        # Prefetch and the adaptive step on, as deployed, but ranges of at most 100: the numbers handed out after
        # the backup then reach well past what the row stood at when it was dumped.
        limits = {"SEGMENT_SEQ_TEST_SETTINGS": '{"MAX_STEP": 100}', **env}
        self.env = worker_env(settings.BACKEND, str(connection.settings_dict["NAME"]), **limits)
        self.outs: list[Path] = []
        self.procs: list[tuple[subprocess.Popen[str], Path]] = []

    def start(self, workers: int, count: int = 10**9) -> None:
        """Start `workers` processes, each taking `count` numbers or until stop() (a file of their own batch)."""
        stop = self.tmp_path / f"stop{len(self.procs)}"
        for _ in range(workers):
            out = self.tmp_path / f"worker{len(self.outs)}.txt"
            command = [sys.executable, "-m", "tests.support.restore_worker", str(out), NAME, str(count), str(stop)]
            proc = subprocess.Popen(command, cwd=ROOT, env=self.env, stderr=subprocess.PIPE, text=True)
            self.outs.append(out)
            self.procs.append((proc, stop))

    def count(self) -> int:
        return len(self.numbers())

    def wait_for(self, more: int) -> None:
        """Wait until the workers have handed out `more` numbers beyond what they have now."""
        target = self.count() + more
        deadline = time.monotonic() + TIMEOUT
        while self.count() < target:
            assert time.monotonic() < deadline, f"the workers handed out {self.count()} numbers, not {target}"
            assert any(proc.poll() is None for proc, _ in self.procs), "every worker has ended"
            time.sleep(0.05)

    def stop(self, *, finish: bool = False) -> None:
        """Stop every worker (each ends at its next number, giving its unused numbers back) and check it succeeded;
        with `finish`, let each take all it was asked for first."""
        for _proc, stop in self.procs:
            if not finish:
                stop.touch()
        for proc, _ in self.procs:
            _, err = proc.communicate(timeout=TIMEOUT)
            assert proc.returncode == 0, f"worker exited with {proc.returncode}:\n{err}"

    def kill(self) -> None:
        for proc, _ in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def errors(self) -> dict[str, int]:
        """The errors the workers rode out (the table missing or locked while it was restored), by type."""
        totals: collections.Counter[str] = collections.Counter()
        for out in self.outs:
            figures = Path(str(out) + ".json")
            if figures.exists():
                totals.update(json.loads(figures.read_text())["errors"])
        return dict(totals)

    def numbers(self) -> list[int]:
        found = []
        for out in self.outs:
            if out.exists():
                lines = out.read_text().split("\n")
                found += [int(line) for line in lines[:-1] if line]
        return found


@pytest.fixture
def crew(tmp_path):
    Sequence.objects.create(name=NAME, step=20)
    workers = Crew(tmp_path)
    yield workers
    workers.kill()


def _run(command: list[str], *, stdin: Path | None = None, stdout: Path | None = None) -> None:
    with (
        open(stdin, "rb") if stdin else open(os.devnull, "rb") as given,
        open(stdout, "wb") if stdout else open(os.devnull, "wb") as taken,
    ):
        done = subprocess.run(command, stdin=given, stdout=taken, stderr=subprocess.PIPE, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed: {done.stderr.decode(errors='replace')}"


def _server() -> tuple[list[str], str]:
    """The client options reaching the test server (host, port, user), and this run's test database."""
    db = connection.settings_dict
    host, port, user = db["HOST"] or "127.0.0.1", str(db["PORT"] or ""), db["USER"]
    if settings.BACKEND == "postgres":
        options = ["-h", host, "-U", user] + (["-p", port] if port else [])
    else:
        options = ["-h", host, "-u", user] + (["-P", port] if port else [])
        if db["PASSWORD"]:
            options.append(f"--password={db['PASSWORD']}")
    return options, str(db["NAME"])


def dump(path: Path, *, data_only: bool = False) -> None:
    """The Sequence table, as the tools dump it by default (DROP and CREATE included), or its rows alone."""
    options, name = _server()
    if settings.BACKEND == "postgres":
        _run(["pg_dump", *options, "-Fc", "-t", TABLE, *(["--data-only"] if data_only else []), "-f", str(path), name])
    else:
        rows_only = ["--no-create-info", "--replace"] if data_only else []
        _run(["mysqldump", *options, "--single-transaction", *rows_only, name, TABLE], stdout=path)


def restore(path: Path, *, data_only: bool = False) -> None:
    """Restore `path` the usual way: pg_restore --clean, mysql < dump; data only into the same table when asked."""
    options, name = _server()
    if settings.BACKEND == "postgres":
        if data_only:
            _run(["psql", *options, "-d", name, "-c", f'TRUNCATE "{TABLE}"'])
            _run(["pg_restore", *options, "--data-only", "-d", name, str(path)])
        else:
            _run(["pg_restore", *options, "--clean", "-d", name, str(path)])
    else:
        _run(["mysql", *options, name], stdin=path)


def repeats(numbers: list[int]) -> list[int]:
    return sorted(n for n, times in collections.Counter(numbers).items() if times > 1)


def _backed_up(crew: Crew, path: Path, *, data_only: bool = False) -> int:
    """Dump while the workers run; returns the highest number handed out before the dump."""
    crew.wait_for(300)
    before = max(crew.numbers())
    dump(path, data_only=data_only)
    crew.wait_for(1200)  # handed out after the backup: what the restore brings back
    return before


def _assert_went_back(before: int, numbers: list[int]) -> None:
    """The scenario happened: numbers past the backup were handed out, which the restored row does not know of."""
    assert max(numbers) > before + 800, f"only {max(numbers) - before} numbers past the backup"


def test_restore_with_the_app_stopped_repeats_nothing(crew, tmp_path):
    crew.start(2)
    backup = tmp_path / "backup"
    before = _backed_up(crew, backup)
    crew.stop()
    _assert_went_back(before, crew.numbers())
    restore(backup)
    assert Sequence.objects.get(name=NAME).value < max(crew.numbers()), "the restore did not put the row back"
    crew.start(2, count=800)
    crew.stop(finish=True)
    numbers = crew.numbers()
    assert not repeats(numbers), f"{len(repeats(numbers))} of {len(numbers)} numbers repeated"


def test_restore_with_the_app_running_repeats_nothing(crew, tmp_path):
    crew.start(3)
    backup = tmp_path / "backup"
    before = _backed_up(crew, backup)
    restore(backup)  # the workers go on taking numbers meanwhile
    crew.wait_for(1000)
    crew.start(1)  # and a process started after the restore, which saw nothing before it
    crew.wait_for(1000)
    crew.stop()
    numbers = crew.numbers()
    _assert_went_back(before, numbers)
    print(f"{len(numbers)} numbers, errors ridden out: {crew.errors()}")
    assert not repeats(numbers), f"{len(repeats(numbers))} of {len(numbers)} numbers repeated"
    assert "IntegrityError" not in crew.errors(), "a saved row met a number stored before"


def test_data_only_restore_then_advance_repeats_nothing(crew, tmp_path):
    crew.start(2)
    backup = tmp_path / "backup"
    before = _backed_up(crew, backup, data_only=True)
    crew.stop()
    _assert_went_back(before, crew.numbers())
    restore(backup, data_only=True)  # the same table, its rows put back: nothing for the app to see
    assert Sequence.objects.get(name=NAME).value < max(crew.numbers())
    out = io.StringIO()
    call_command("segment_seq", "advance", "--dry-run", stdout=out)
    assert Sequence.objects.get(name=NAME).value < max(crew.numbers()), "--dry-run moved the row"
    call_command("segment_seq", "advance", stdout=out)
    assert f"{NAME}: moved from" in out.getvalue()
    crew.start(2, count=800)
    crew.stop(finish=True)
    numbers = crew.numbers()
    assert not repeats(numbers), f"{len(repeats(numbers))} of {len(numbers)} numbers repeated"


def _gap_after(crew: Crew, before: list[int]) -> int:
    """Run one worker for 500 numbers; the numbers skipped between the previous ones and its first."""
    crew.start(1, count=500)
    crew.stop(finish=True)
    numbers = crew.numbers()
    assert not repeats(numbers)
    return min(set(numbers) - set(before)) - max(before) - 1


def test_a_rebuild_costs_one_failover_skip_on_mariadb_and_nothing_on_postgresql(crew):
    """OPTIMIZE TABLE re-creates an InnoDB table (a new table id) and keeps its rows: the app cannot tell it from a
    restore, and the next range skips FAILOVER_SKIP once; PostgreSQL's VACUUM FULL keeps the table's oid."""
    crew.start(1, count=500)
    crew.stop(finish=True)
    first = crew.numbers()
    with connection.cursor() as cursor:
        cursor.execute(f"OPTIMIZE TABLE {TABLE}" if settings.BACKEND == "mariadb" else f'VACUUM FULL "{TABLE}"')
        cursor.fetchall() if settings.BACKEND == "mariadb" else None
    gap = _gap_after(crew, first)
    skip = app_settings()["FAILOVER_SKIP"]
    if settings.BACKEND == "mariadb":
        assert skip <= gap < skip + skip // 10, f"the rebuild cost {gap} numbers"
    else:
        assert gap < skip // 10, f"VACUUM FULL cost {gap} numbers"
    assert _gap_after(crew, crew.numbers()) < skip // 10, "a second range after the rebuild skipped again"


def test_restore_seen_by_a_mariadb_user_without_the_process_privilege(tmp_path):
    """Without PROCESS InnoDB's table ids cannot be read: the table's creation time stands in for them."""
    if settings.BACKEND != "mariadb":
        pytest.skip("the PROCESS privilege is MariaDB's")
    Sequence.objects.create(name=NAME, step=20)
    login = f"seqrestore_{os.getpid()}"
    database = connection.settings_dict["NAME"]
    db = connection.settings_dict
    url = f"mysql://{login}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 3306}/{database}"
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE USER '{login}'@'%'")
        cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{database}`.* TO '{login}'@'%'")
    crew = Crew(tmp_path, SEGMENT_SEQ_TEST_MARIADB_URL=url)
    try:
        crew.start(2)
        backup = tmp_path / "backup"
        before = _backed_up(crew, backup)
        crew.stop()
        _assert_went_back(before, crew.numbers())
        restore(backup)
        crew.start(2, count=800)
        crew.stop(finish=True)
    finally:
        crew.kill()
        with connection.cursor() as cursor:
            cursor.execute(f"DROP USER IF EXISTS '{login}'@'%'")
    assert "/c" in Sequence.objects.get(name=NAME).history  # the creation time, not a table id
    numbers = crew.numbers()
    assert not repeats(numbers), f"{len(repeats(numbers))} of {len(numbers)} numbers repeated"
