"""Django's own PostgreSQL connection pool: the app's private connections never come from it, go back to it or
change what it hands the project."""

import json
import subprocess
import sys

import pytest
from django.conf import settings

from django_segment_seq.models import Sequence
from tests.conftest import ROOT, assert_unique, worker_env

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(settings.BACKEND != "postgres", reason="Django's connection pool is PostgreSQL's"),
    pytest.mark.processes,
]


def run_pooled(scenario: str, name: str, pool: dict[str, object], timeout: float = 90, **env: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.pool_worker", scenario, name],
        cwd=ROOT,
        env=worker_env(SEGMENT_SEQ_TEST_PG_POOL=json.dumps(pool), **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_no_lock_timeout_reaches_a_connection_of_the_projects_pool():
    """Before: the private session went back to the project's pool with lock_timeout 2s, and a request got it."""
    Sequence.objects.create(name="pooled", step=3)
    result = run_pooled(
        "leak", "pooled", {"min_size": 2, "max_size": 2, "timeout": 5},
        SEGMENT_SEQ_TEST_SETTINGS=json.dumps({"CONNECTION_MAX_IDLE": 0.3}),
    )  # fmt: skip
    assert result["lock_timeouts"] == ["0"], f"lock_timeout seen on the project's pooled connections: {result}"
    assert_unique(result["numbers"], 9)


def test_a_range_is_taken_while_the_projects_pool_is_exhausted():
    """Before: with the pool's one connection in the caller's atomic(), the range waited 6 x the pool's timeout."""
    Sequence.objects.create(name="starved", step=2)
    result = run_pooled("starve", "starved", {"min_size": 1, "max_size": 1, "timeout": 2})
    assert result["errors"] == [], result
    assert result["waited"] < settings.SEGMENT_SEQ.get("LOCK_TIMEOUT", 2.0) + 3, result
    assert_unique(result["numbers"], 7 + 3)
