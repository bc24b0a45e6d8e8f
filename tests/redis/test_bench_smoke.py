"""The Redis fleet benchmark in its smoke size: both paths run on the backend under test, with no repeat."""

import pytest

from tests.redis.conftest import require_redis
from tests.support.benchmarks import smoke_figures


@pytest.mark.processes
def test_redis_fleet_smoke_run_completes(tmp_path):
    require_redis()
    figures = smoke_figures("benchmarks/redis_fleet.py", tmp_path / "redis.json")
    for path in ("table", "redis"):
        assert figures[path]["repeats"] == 0 and figures[path]["numbers"] >= 4, path
    assert figures["redis"]["redis_takes"] > 0 and figures["table"]["redis_takes"] == 0
    assert figures["single_process"]["tier_row_ns"] > 0
