"""Shared fixtures: the backend under test, worker processes against the test database, and uniqueness checks."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.management import create_permissions
from django.contrib.contenttypes.management import create_contenttypes
from django.core.management import call_command
from django.core.management.color import no_style
from django.core.management.sql import emit_post_migrate_signal
from django.db import connection, connections
from django.db.models.signals import post_migrate
from django.test import TransactionTestCase

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


# Process tests whose subject is not the database: they take as long on every backend and find the same things, so
# a whole run runs them in one job only (tests/support/run_backends.py: SEGMENT_SEQ_RUN_ONCE, and a check that they
# ran in exactly one job). Each entry is a file or a test of one (its name, every parametrization). The ID
# service's tests that take numbers under concurrency, a held row lock, an outage or a killed worker are not here:
# concurrency, locks, give-back, restores, clusters and faults run on every backend.
RUN_ONCE = (
    "tests/processes/test_admin_browser.py",
    "tests/processes/test_register_browser.py",
    "tests/processes/test_benchmark.py",
    "tests/processes/test_benchmark_connections.py",
    "tests/processes/test_benchmark_gaps.py",
    "tests/processes/test_benchmark_service_paths.py",
    "tests/processes/test_user_project.py",
    "tests/processes/test_testing.py::test_user_project_pytest_suite_passes_with_each_test_starting_at_one",
    "tests/processes/test_testing.py::test_user_project_manage_py_test_passes",
    "tests/processes/test_testing.py::test_user_project_manage_py_test_cleans_up_with_the_runner_alone",
    "tests/processes/test_testing.py::test_user_project_manage_py_test_with_rows_of_set_up_test_data",
    "tests/processes/test_testing.py::test_user_project_tests_fail_without_the_plugin",
    "tests/processes/test_testing.py::test_a_project_without_the_app_runs_its_tests_untouched",
    "tests/processes/test_id_service.py::test_security_answers",
    "tests/processes/test_id_service.py::test_health_and_the_openapi_document",
    "tests/processes/test_id_service.py::test_fuzz_never_a_500",
    "tests/processes/test_id_service.py::test_remote_sequence_against_the_live_server",
    "tests/processes/test_id_service.py::test_remote_sequence_waits_for_a_server_that_goes_away_and_comes_back",
    "tests/processes/test_id_service.py::test_servers_leave_no_process_behind",
    "tests/processes/test_id_service.py::test_only_plain_rows_that_exist_over_the_wire",
    "tests/processes/test_id_service.py::test_a_forged_log_line_is_a_400_and_never_logged",
    "tests/processes/test_id_service.py::test_the_rate_holds_on_a_shared_file_cache_under_concurrency",
    "tests/processes/test_id_service.py::test_refusals_are_limited_too",
    "tests/processes/test_id_service.py::test_bad_input_is_a_400_naming_the_field_over_the_wire",
    "tests/processes/test_id_service.py::test_schemathesis_finds_nothing_against_the_live_server",
)


def runs_once(item: pytest.Item) -> bool:
    """Whether a test is one of RUN_ONCE, or marked `once` where it is written."""
    path, _, name = item.nodeid.partition("::")
    return item.get_closest_marker("once") is not None or any(
        entry in (path, f"{path}::{name.split('[')[0]}") for entry in RUN_ONCE
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that start worker processes, and the run-once ones."""
    for item in items:
        if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.processes)
        if runs_once(item):
            item.add_marker(pytest.mark.once)


class RunOnceSelection:
    """Leaves the run-once tests out under SEGMENT_SEQ_RUN_ONCE=0, after -m, -k and the like chose the rest, and says
    which it kept or left out in SEGMENT_SEQ_ONCE_REPORT (a JSON file), so the runner sees every one ran once."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        once = [item for item in items if item.get_closest_marker("once") is not None]
        left_out = once if os.environ.get("SEGMENT_SEQ_RUN_ONCE") == "0" else []
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item.get_closest_marker("once") is None]
        report = os.environ.get("SEGMENT_SEQ_ONCE_REPORT")
        if report:
            ran = [] if left_out else [item.nodeid for item in once]
            Path(report).write_text(json.dumps({"ran": ran, "left_out": [item.nodeid for item in left_out]}))


# The two tables Django's post_migrate fills for every app, kept through a transactional test's flush. Django's own
# flush deletes them and makes them again (emit_post_migrate_signal): about three quarters of such a test's time.
KEPT_TABLES = ("django_content_type", "auth_permission")
KEPT_QUERIES = (
    "SELECT id, app_label, model FROM django_content_type ORDER BY id",
    "SELECT id, content_type_id, codename, name FROM auth_permission ORDER BY id",
)
AUTH_RECEIVER = "django.contrib.auth.management.create_permissions"  # the dispatch_uid auth's AppConfig gives it
# What the kept tables held before the first transactional test on each database: a test that leaves them otherwise
# (a permission made or deleted, a content type removed) is flushed as Django flushes, and they are made again.
kept_rows: dict[str, list[list[tuple[Any, ...]]]] = {}
# Django's own methods, as TransactionTestCase defines them (_fixture_setup is a classmethod since Django 5.2).
DJANGO_FIXTURE_METHODS = {name: TransactionTestCase.__dict__[name] for name in ("_fixture_setup", "_fixture_teardown")}


def read_kept_rows(alias: str, tables: Iterable[str] | None = None) -> list[list[tuple[Any, ...]]] | None:
    """The rows of the kept tables, or None on a database without them (one the migrations did not make)."""
    if not set(KEPT_TABLES) <= set(connections[alias].introspection.table_names() if tables is None else tables):
        return None
    with connections[alias].cursor() as cursor:
        rows = []
        for query in KEPT_QUERIES:
            cursor.execute(query)
            rows.append([tuple(row) for row in cursor.fetchall()])
        return rows


@contextlib.contextmanager
def without_content_type_receivers() -> Iterator[None]:
    """post_migrate without Django's two receivers that re-make the kept tables; the others (the app's record of its
    concealed formats) still run, so a flushed database holds what Django's flush leaves."""
    post_migrate.disconnect(create_contenttypes)
    post_migrate.disconnect(dispatch_uid=AUTH_RECEIVER)
    try:
        yield
    finally:
        post_migrate.connect(create_permissions, dispatch_uid=AUTH_RECEIVER)
        post_migrate.connect(create_contenttypes)


def flush_keeping_content_types(alias: str) -> None:
    """Flush one database as Django's flush does, except that content types and permissions stay when the test left
    them as they were: every other table is emptied and post_migrate sent without the receivers that re-make them."""
    db = connections[alias]
    existing = set(db.introspection.table_names(include_views=False))
    before = kept_rows.get(alias)
    if before is None or read_kept_rows(alias, existing) != before:
        call_command("flush", verbosity=0, interactive=False, database=alias, reset_sequences=False)
        if before is not None:
            kept_rows[alias] = read_kept_rows(alias) or []
        return
    convert = db.introspection.identifier_converter
    tables = [t for t in db.introspection.django_table_names() if convert(t) in existing and t not in KEPT_TABLES]
    statements = db.ops.sql_flush(no_style(), tables, reset_sequences=False)
    db.ops.execute_sql_flush(statements)
    with without_content_type_receivers():
        emit_post_migrate_signal(0, False, alias)


def django_method(name: str, test: Any) -> Any:
    """Django's own TransactionTestCase method, bound to a test or test class as Django would bind it."""
    method = DJANGO_FIXTURE_METHODS[name]
    owner = test if isinstance(test, type) else type(test)
    return method.__get__(None if isinstance(method, classmethod) else test, owner)


def cheap_fixture_setup(test: Any) -> None:
    """Read the kept tables of each database once, before the first transactional test that uses it."""
    if flushes_cheaply(test):
        for alias in test._databases_names(include_mirrors=False):
            if alias not in kept_rows:
                rows = read_kept_rows(alias)
                if rows is not None:
                    kept_rows[alias] = rows
    django_method("_fixture_setup", test)()


def cheap_fixture_teardown(test: Any) -> None:
    """A transactional test's flush, keeping content types and permissions; Django's own for a test that sets
    available_apps or serialized_rollback (Django handles both itself), or under SEGMENT_SEQ_TEST_DJANGO_FLUSH=1."""
    if not flushes_cheaply(test):
        django_method("_fixture_teardown", test)()
        return
    for alias in test._databases_names(include_mirrors=False):
        flush_keeping_content_types(alias)


def flushes_cheaply(test: Any) -> bool:
    return (
        test.available_apps is None
        and not test.serialized_rollback
        and os.environ.get("SEGMENT_SEQ_TEST_DJANGO_FLUSH") != "1"
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the `once` mark; put the cheap flush in Django's place, as the same kind of method Django's is."""
    config.addinivalue_line("markers", "once: backend-independent, run in one job of a whole run (RUN_ONCE)")
    config.pluginmanager.register(RunOnceSelection(), "segment-seq-run-once")
    for name, ours in (("_fixture_setup", cheap_fixture_setup), ("_fixture_teardown", cheap_fixture_teardown)):
        setattr(
            TransactionTestCase,
            name,
            classmethod(ours) if isinstance(DJANGO_FIXTURE_METHODS[name], classmethod) else ours,
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    for name, method in DJANGO_FIXTURE_METHODS.items():
        setattr(TransactionTestCase, name, method)


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
