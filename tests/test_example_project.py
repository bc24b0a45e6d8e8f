"""The example project: its migrations are current and its main job runs and reports unique numbers."""

import subprocess
import sys

import pytest
from django.conf import settings

from tests.conftest import ROOT

# The example runs on its own SQLite file whatever the backend under test, so once is enough.
pytestmark = pytest.mark.skipif(settings.BACKEND != "sqlite", reason="runs once, in the SQLite run")

MANAGE = ROOT / "example_project" / "manage.py"


def manage(*args: str, database_url: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": database_url}
    return subprocess.run([sys.executable, str(MANAGE), *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'shop.sqlite3'}"


def test_example_migrations_are_up_to_date(sqlite_url):
    result = manage("makemigrations", "--check", "--dry-run", database_url=sqlite_url)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.processes
def test_example_demo_reports_unique_numbers(sqlite_url):
    for run in (1, 2):
        result = manage("demo", "--processes", "3", "--orders", "8", database_url=sqlite_url)
        assert result.returncode == 0, result.stdout + result.stderr
        total = 3 * 8 * run
        assert f"OK: all {total} order numbers and all {total} receipt ids are unique." in result.stdout
