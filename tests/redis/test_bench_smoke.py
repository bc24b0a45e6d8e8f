"""The Redis fleet benchmark in its smoke size: both paths run on the backend under test, with no repeat."""

import json
import subprocess
import sys

import pytest
from django.conf import settings

from tests.conftest import ROOT
from tests.redis.conftest import require_redis


@pytest.mark.processes
def test_redis_fleet_smoke_run_completes(tmp_path):
    require_redis()
    out = tmp_path / "redis.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/redis_fleet.py", "--smoke", "--db", settings.BACKEND, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    figures = json.loads(out.read_text())
    for path in ("table", "redis"):
        assert figures[path]["repeats"] == 0 and figures[path]["numbers"] >= 4, path
    assert figures["redis"]["redis_takes"] > 0 and figures["table"]["redis_takes"] == 0
    assert figures["single_process"]["tier_row_ns"] > 0
