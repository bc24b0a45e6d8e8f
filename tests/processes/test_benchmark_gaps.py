"""The gap-report benchmark in its smoke size: it fills both tables, voids some gaps and finds every gap again."""

import pytest

from tests.support.benchmarks import smoke_figures

pytestmark = pytest.mark.processes  # a subprocess with a scratch database of its own


def test_gaps_smoke_run_finds_every_gap(tmp_path):
    figures = smoke_figures("benchmarks/gaps.py", tmp_path / "gaps.json")
    for kind in ("integer", "formatted"):
        assert (figures[kind]["rows"], figures[kind]["gaps"], figures[kind]["voided"]) == (2000, 20, 10)
