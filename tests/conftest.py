"""Shared fixtures: the backend under test, worker processes against the test database, and uniqueness checks."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from django_segment_seq import clear_cache
from django_segment_seq.allocator.connections import pool
from tests.support import netns

ROOT = Path(__file__).resolve().parent.parent

# Users' projects run in their own subprocesses (tests/processes/test_user_project.py and test_testing.py),
# not in this suite.
collect_ignore = ["userproject", "userproject_testing"]


# Tests that start worker processes through these fixtures carry the "processes" mark (others are
# marked where they are written); the matrix's core cells leave them out with -m "not processes".
PROCESS_FIXTURES = {"run_workers", "stress_workers", "user_project", "workers", "tier_workers"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.processes)


def pytest_report_header(config: pytest.Config) -> str:
    db = settings.DATABASES["default"]
    return f"django-segment-seq backend: {settings.BACKEND} ({db['ENGINE']})"


@pytest.fixture(scope="session", autouse=True)
def _close_private_connections(django_db_setup, django_db_blocker):
    """The allocator's own connections, and the fast path's kept threads', must be closed before the test database is
    dropped."""
    yield
    pool.close_all()
    if "django_segment_seq.service" in settings.INSTALLED_APPS:
        from django_segment_seq.service.kept_thread import counting_thread, usage_thread

        counting_thread.close()
        usage_thread.close()


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Tables are flushed between tests, so cached ranges must go too."""
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def backend() -> str:
    return settings.BACKEND


def assert_unique(numbers: Iterable[int], expected_count: int | None = None) -> list[int]:
    """Fail with the repeated numbers named, so a duplicate is never lost in a length comparison."""
    numbers = list(numbers)
    repeated = [n for n, times in collections.Counter(numbers).items() if times > 1]
    assert not repeated, f"{len(repeated)} numbers handed out more than once, e.g. {sorted(repeated)[:10]}"
    if expected_count is not None:
        assert len(numbers) == expected_count
    return numbers


def worker_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        SEGMENT_SEQ_TEST_DB=settings.BACKEND,
        SEGMENT_SEQ_TEST_DB_NAME=str(connection.settings_dict["NAME"]),
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    env.update(extra)
    return env


@pytest.fixture
def run_workers(transactional_db, tmp_path) -> Callable[..., list[list[int]]]:
    """Start one process per job (mode, name, count) at once; return what each handed out."""

    def run(jobs: list[tuple[str, str, int]], timeout: float = 300, **env: str) -> list[list[int]]:
        outs = [tmp_path / f"worker{i}.txt" for i in range(len(jobs))]
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.support.workers", mode, name, str(count), str(out)],
                cwd=ROOT,
                env=worker_env(**env),
                stderr=subprocess.PIPE,
                text=True,
            )
            for (mode, name, count), out in zip(jobs, outs, strict=True)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, f"worker failed:\n{err}"
        results = [[int(line) for line in out.read_text().split()] for out in outs]
        for (_, _, count), got in zip(jobs, results, strict=True):
            assert len(got) >= count
        return results

    return run


class StressWorkers:
    """Resilient worker processes (tests/stress/worker.py) against the test database, started one by one."""

    def __init__(self, tmp_path: Path, db_name: str | None = None, **env: str) -> None:
        from tests.stress.run import worker_env as stress_env

        self.tmp_path = tmp_path
        self.env = stress_env(settings.BACKEND, db_name or str(connection.settings_dict["NAME"]), **env)
        self.outs: list[Path] = []
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, count: int, *options: str, **env: str) -> subprocess.Popen[str]:
        from tests.stress.run import start_worker

        out = self.tmp_path / f"worker{len(self.outs)}.txt"
        proc = start_worker(out, count, {**self.env, **env}, "--seed", str(len(self.outs)), *options)
        self.outs.append(out)
        self.procs.append(proc)
        return proc

    def running(self) -> list[subprocess.Popen[str]]:
        return [proc for proc in self.procs if proc.poll() is None]

    def wait(self, timeout: float = 300, killed: Iterable[subprocess.Popen[str]] = ()) -> None:
        """Wait for every worker; all but the ones in `killed` must have succeeded."""
        from tests.stress.run import wait_all

        killed = list(killed)
        wait_all([proc for proc in self.procs if proc not in killed], timeout)
        for proc in killed:
            proc.wait(timeout)

    def numbers(self) -> list[int]:
        from tests.stress.worker import read_numbers

        return [n for out in self.outs for n in read_numbers(str(out))]

    def rolled_back(self) -> list[int]:
        from tests.stress.worker import read_numbers

        return [n for out in self.outs for n in read_numbers(str(out) + ".rolledback")]

    def figures(self) -> dict[str, int]:
        from tests.stress.run import read_figures

        return read_figures(self.outs)

    def kill_all(self) -> None:
        for proc in self.running():
            proc.kill()
            proc.wait()


@pytest.fixture
def stress_workers(transactional_db, tmp_path) -> Iterable[StressWorkers]:
    """Start resilient workers (random value / values / save) on the test database; killed if a test fails."""
    workers = StressWorkers(tmp_path)
    yield workers
    workers.kill_all()


class Clock:
    """The instant formatted sequence fields see, set by a test instead of waiting for midnight."""

    def __init__(self) -> None:
        self.moment = None

    def set(self, local: str) -> Clock:
        """Set the clock to a wall time in the project's time zone, e.g. "2026-11-22 23:59:59"."""
        from datetime import datetime

        from django.utils import timezone

        self.moment = timezone.make_aware(datetime.fromisoformat(local), timezone.get_default_timezone())
        return self

    def advance(self, **delta: float) -> Clock:
        from datetime import timedelta

        self.moment = self.moment + timedelta(**delta)
        return self

    def __call__(self):
        from django.utils import timezone

        return timezone.localtime(self.moment, timezone.get_default_timezone())


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """Replaces django_segment_seq.flow.formats.now; starts at 2026-11-22 12:00 in the project's time zone."""
    from django_segment_seq.flow import formats as formatting

    fake = Clock().set("2026-11-22 12:00:00")
    monkeypatch.setattr(formatting, "now", fake)
    return fake


@pytest.fixture
def minute_with_room() -> int:
    """For a test that counts a per-minute rate exactly: it starts with 3 s or more left in the minute's window
    (which its requests, a few milliseconds each, stay in); the window's number."""
    from tests.support.windows import room_in_window

    return room_in_window(60, 3)


@pytest.fixture
def user_project(tmp_path):
    """tests/userproject on a database of the backend under test, created for this test and dropped after it."""
    from tests.support.user_project import UserProject, throwaway_database

    with throwaway_database(settings.BACKEND, tmp_path) as db_name:
        yield UserProject(settings.BACKEND, db_name)


@pytest.fixture
def network(request: pytest.FixtureRequest) -> Iterator[netns.Network]:
    """A bridge in a network namespace of its own, to which a test joins its nodes; every namespace it made is
    removed at the end, also on failure (and by a reaper if pytest itself is killed). Without root, ip or iptables
    the test is skipped, but fails under CI=true."""
    problem = netns.missing()
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI runs the partition tests and cannot here: {problem}")
        pytest.skip(f"cannot make network namespaces: {problem}")
    netns.clean_stale()
    network = netns.Network()
    request.addfinalizer(network.stop)
    yield network
