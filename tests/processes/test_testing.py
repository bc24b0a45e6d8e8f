"""Testing helpers: reset_sequences() in-process, a user project under pytest and `manage.py test` in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest
from django.conf import settings
from django.db import DatabaseError, connection

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from django_segment_seq.testing import reset_sequences
from tests.conftest import ROOT

USER_PROJECT = ROOT / "tests" / "userproject_testing"
TEARDOWN_ERROR = "being accessed by other users"
# A cleanup that waits for a lock the class's own transaction holds ends in one of these.
LOCK_ERRORS = ("lock timeout", "Lock wait timeout", "SequenceUnavailable")


@pytest.mark.django_db(transaction=True)
def test_reset_sequences_puts_every_row_back_and_forgets_the_cache():
    Sequence.objects.create(name="invoice", step=10, min_value=100)
    Sequence.objects.create(name="ticket", step=10)
    Sequence.objects.create(name="ticket@2026-11", base_name="ticket", period="2026-11", step=10)
    for name in ("invoice", "ticket", "ticket@2026-11"):
        next_value(name)
    versions = dict(Sequence.objects.values_list("name", "version"))

    reset_sequences()

    rows = {row.name: row for row in Sequence.objects.all()}
    assert {name: row.value for name, row in rows.items()} == {"invoice": 99, "ticket": 0, "ticket@2026-11": 0}
    assert all(rows[name].version > versions[name] for name in rows)
    assert [next_value("invoice"), next_value("ticket"), next_value("ticket@2026-11")] == [100, 1, 1]


@pytest.mark.django_db(transaction=True)
def test_reset_sequences_by_name_takes_its_period_rows_and_nothing_else():
    Sequence.objects.create(name="ticket", step=10)
    Sequence.objects.create(name="ticket@2026-11", base_name="ticket", period="2026-11", step=10)
    Sequence.objects.create(name="invoice", step=10)
    for name in ("ticket", "ticket@2026-11", "invoice"):
        next_value(name)

    reset_sequences("ticket")

    assert dict(Sequence.objects.values_list("name", "value")) == {"ticket": 0, "ticket@2026-11": 0, "invoice": 10}
    assert next_value("ticket") == 1
    assert next_value("invoice") == 11  # its cache was forgotten too: a new range


def _test_database_name(run: str) -> str:
    return f"test_userproject_{os.getpid()}_{run}"


def _user_project_env(run: str) -> dict[str, str]:
    # The user's project reads its own settings; nothing of this suite's pytest or Django setup leaks in.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_", "SEGMENT_SEQ_"))}
    env.update(
        USERPROJECT_DB=settings.BACKEND,
        USERPROJECT_TEST_NAME=_test_database_name(run),
        PYTHONPATH=str(ROOT),
    )
    return env


def _run_user_project(args: list[str], run: str, blocker: Any, **env: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, *args],
            cwd=USER_PROJECT,
            env={**_user_project_env(run), **env},
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        with blocker.unblock():
            _drop_left_over(_test_database_name(run))


def _drop_left_over(name: str) -> None:
    """A run whose teardown failed leaves its test database behind: drop it (SQLite's was in memory)."""
    if connection.vendor == "sqlite":
        return
    for attempt in range(20):
        try:
            with connection._nodb_cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(name)}")
            return
        except DatabaseError:
            if attempt == 19:
                raise
            time.sleep(0.5)  # the run's sessions may take a moment to end


@pytest.mark.parametrize("order", ["collected", "reversed"])
def test_user_project_pytest_suite_passes_with_each_test_starting_at_one(order, django_db_blocker):
    args = ["-m", "pytest", "-q"] + (["--reverse-order"] if order == "reversed" else [])
    result = _run_user_project(args, f"pytest_{order}", django_db_blocker)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert "39 passed" in result.stdout, output[-5000:]
    assert TEARDOWN_ERROR not in output
    assert not any(error in output for error in LOCK_ERRORS), output[-5000:]
    assert "error" not in result.stdout.splitlines()[-1].lower()


@pytest.mark.parametrize(
    "runner",
    [
        "django_segment_seq.testing.DiscoverRunner",
        # Every class there uses SequenceTestCaseMixin, which closes the private connections itself.
        "django.test.runner.DiscoverRunner",
    ],
)
def test_user_project_manage_py_test_passes(runner, django_db_blocker):
    run = "manage" if runner.startswith("django_segment_seq") else "plainrunner"
    result = _run_user_project(
        ["manage.py", "test", "tests.test_orders", "-v", "2", "--testrunner", runner], run, django_db_blocker
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert "Ran 7 tests" in output and "\nOK" in output, output[-5000:]
    assert TEARDOWN_ERROR not in output
    assert "Destroying test database for alias 'default'" in output


@pytest.mark.parametrize("order", ["", "--reverse"])
def test_user_project_manage_py_test_cleans_up_with_the_runner_alone(order, django_db_blocker):
    """TestCase classes without the mixin, reset_sequences() in setUp: the app's runner cleans after every test
    and class (before, it only closed connections, and a class creating the row its predecessor had used
    first failed with IntegrityError on MariaDB and PostgreSQL)."""
    args = ["manage.py", "test", "tests.test_runner_only", "-v", "2"]  # TEST_RUNNER is the app's
    result = _run_user_project([*args, *([order] if order else [])], "runneronly" + order.strip("-"), django_db_blocker)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert "Ran 6 tests" in output and "\nOK" in output, output[-5000:]
    assert "IntegrityError" not in output and TEARDOWN_ERROR not in output
    assert not any(error in output for error in LOCK_ERRORS), output[-5000:]


@pytest.mark.parametrize("order", ["", "--reverse"])
@pytest.mark.parametrize("runner", ["django_segment_seq.testing.DiscoverRunner", "django.test.runner.DiscoverRunner"])
def test_user_project_manage_py_test_with_rows_of_set_up_test_data(runner, order, django_db_blocker):
    """TestCase classes whose setUpTestData creates or resets the row: every test sees it as left there, in any order.

    The cleanup after each test runs while the class's transaction holds those rows: it must leave them
    to its rollback, never wait for them.
    """
    run = ("classrows" if runner.startswith("django_segment_seq") else "classrowsplain") + order.strip("-")
    args = ["manage.py", "test", "tests.test_class_rows", "tests.test_orders", "-v", "2", "--testrunner", runner]
    result = _run_user_project([*args, *([order] if order else [])], run, django_db_blocker)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert "Ran 16 tests" in output and "\nOK" in output, output[-5000:]
    assert TEARDOWN_ERROR not in output
    assert not any(error in output for error in LOCK_ERRORS), output[-5000:]
    assert "Destroying test database for alias 'default'" in output


def test_user_project_tests_fail_without_the_plugin(django_db_blocker):
    """The user project's tests depend on the plugin: without it, the first test's row leaks into the next."""
    args = ["-m", "pytest", "-q", "-p", "no:django_segment_seq", "tests/test_plugin_only.py"]
    result = _run_user_project(args, "bare", django_db_blocker)
    assert result.returncode != 0
    assert "IntegrityError" in result.stdout
    if connection.vendor == "postgresql":
        # The first test's private connection is still open when pytest-django drops the database.
        assert TEARDOWN_ERROR in result.stdout + result.stderr


def test_a_project_without_the_app_runs_its_tests_untouched(django_db_blocker):
    """The package installed, the app not in INSTALLED_APPS: the plugin, loaded through its entry point, does
    nothing (before, every database test failed at setup and teardown: the Sequence model "isn't in an application
    in INSTALLED_APPS")."""
    args = ["-m", "pytest", "-q", "without_app"]
    result = _run_user_project(args, "withoutapp", django_db_blocker, USERPROJECT_WITHOUT_APP="1")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert "5 passed" in result.stdout and "error" not in result.stdout.splitlines()[-1].lower(), output[-5000:]
    assert "django_segment_seq" not in output and "Traceback" not in output, output[-5000:]
