"""The fast path's benchmark in its smoke size: the four applications run on one server under wrk, every figure is
reported, and no block the service handed out repeats another."""

import pytest

from tests.support.benchmarks import smoke_figures

pytestmark = pytest.mark.processes


def test_service_paths_smoke_run_reports_every_row_and_repeats_nothing(tmp_path):
    figures = smoke_figures("benchmarks/service_paths.py", tmp_path / "paths.json")
    rows = figures["rows"]
    assert {(row["application"], row["count"]) for row in rows} == {
        (application, count)
        for application in (
            "bare",
            "fast path",
            "fast, rated",
            "rated, memory",
            "fast, no log",
            "rated, no log",
            "Django view",
        )
        for count in (1, 100)
    }
    assert all(row["runs"] == 1 and row["requests_per_s"] > 0 for row in rows), rows
    # Every answer a 200, but for a 503 with Retry-After: a refill that waited past LOCK_TIMEOUT on a loaded machine,
    # the bounded refusal the service promises. A 429 (a rate far above the load) or a 500 is a defect.
    refused = [row for row in rows if row["not_200"] != row["statuses"].get("503", 0)]
    assert refused == [], refused
    assert all(row["p99_ms"] >= row["p50_ms"] > 0 for row in rows)
    served = [row for row in rows if row["application"] in ("fast path", "fast, rated", "rated, memory", "Django view")]
    # Each block the service handed out is in its log, warm-up and runs: at least one per request counted.
    assert all(
        row["blocks_logged"]
        >= sum(run["requests"] for run in figures["runs"] if run["application"] == row["application"])
        and row["overlapping_blocks"] == 0
        for row in served
    )
    assert {ratio["count"] for ratio in figures["ratios"]} == {1, 100}
    assert all(ratio["fast_over_bare"] > 0 and ratio["fast_over_django"] > 0 for ratio in figures["ratios"])
    assert all(ratio["fast_rated_over_bare"] > 0 and ratio["fast_rated_over_django"] > 0 for ratio in figures["ratios"])
    assert all(ratio["rated_no_log_over_bare"] > 0 for ratio in figures["ratios"])
