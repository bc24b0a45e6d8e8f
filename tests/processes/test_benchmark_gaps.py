"""The gap-report benchmark in its smoke size: it fills both tables, voids some gaps and finds every gap again."""

import json
import subprocess
import sys

import pytest
from django.conf import settings

from tests.conftest import ROOT

pytestmark = pytest.mark.processes  # a subprocess with a scratch database of its own


def test_gaps_smoke_run_finds_every_gap(tmp_path):
    out = tmp_path / "gaps.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/gaps.py", "--smoke", "--db", settings.BACKEND, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    figures = json.loads(out.read_text())
    for kind in ("integer", "formatted"):
        assert (figures[kind]["rows"], figures[kind]["gaps"], figures[kind]["voided"]) == (2000, 20, 10)
