"""The connections benchmark in its smoke size (4 processes): every part runs and reports, and no number repeats."""

import json

from django.conf import settings

from tests.conftest import assert_unique
from tests.support.benchmarks import run_benchmark


def numbers_in(folder, part: str) -> list[int]:
    """Every number the workers of one part wrote (one file per worker, one number a line)."""
    return [int(n) for path in sorted(folder.glob(f"{part}*.txt")) for n in path.read_text().split()]


def test_connections_smoke_run_reports_sessions_and_repeats_nothing(tmp_path):
    out, kept = tmp_path / "connections.json", tmp_path / "numbers"
    run_benchmark("benchmarks/connections.py", "--json", str(out), "--keep-numbers", str(kept))
    figures = json.loads(out.read_text())
    assert figures["db"] == settings.BACKEND and figures["smoke"] is True
    steady, start = figures["steady"], figures["start"]
    assert steady["processes"] == 4 and steady["numbers"] > 0 and steady["duplicates"] == 0
    # Each part takes numbers from a sequence of its own: every number of a part must be unique.
    assert_unique(numbers_in(kept, "steady"), steady["numbers"])
    if settings.BACKEND == "sqlite":
        assert "not applicable" in steady["sessions"] and "not applicable" in figures["server"]
        assert start["applicable"] is False
    else:
        assert figures["server"]["max_connections"] > 0
        sessions = steady["sessions"]
        assert sessions["parent"] == 1 and sessions["django_connections"] == 4
        assert sessions["extra_per_process_after_idle"] >= 0 and sessions["extra_while_taking_samples"]
        assert start["applicable"] is True and start["processes"] == 4
        assert start["processes_without_a_number"] == 0 and start["processes_short_of_numbers"] == 0
        assert start["numbers"] == 4 * start["numbers_per_process"] and start["duplicates"] == 0
        assert set(start["first_number_seconds"]) == {"p50", "p99", "max"}
        assert {"retries", "failures", "background_failures", "errors_by_kind"} <= set(start)
        assert_unique(numbers_in(kept, "start"), start["numbers"])
    assert len(figures["table"]) >= 3


def test_bench_runs_the_connections_part_by_name(tmp_path):
    out = tmp_path / "connections.json"
    done = run_benchmark("benchmarks/bench.py", "--only", "connections", "--json", str(out))
    figures = json.loads(out.read_text())
    assert "connections benchmark" in done.stdout
    assert figures["db"] == settings.BACKEND and {"steady", "start", "table"} <= set(figures)
