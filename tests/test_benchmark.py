"""The benchmark in its smoke size: every part runs on the backend under test and writes its figures."""

import json
import subprocess
import sys

from django.conf import settings

from tests.conftest import ROOT


def test_benchmark_smoke_run_completes(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/bench.py", "--smoke", "--db", settings.BACKEND, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    figures = json.loads(out.read_text())
    assert figures["db"] == settings.BACKEND and figures["smoke"] is True
    assert figures["inprocess"]["ratio"] > 0
    assert figures["processes"]["ratio_4"] > 0
    assert figures["create"]["rounds"] >= 2
    assert figures["bulk"]["stored"] == [figures["bulk"]["rows"]] * 5
    assert figures["bulk"]["allocations"]["default"] <= figures["bulk"]["rows"] // figures["bulk"]["batch"]
    assert "blocking_fetches" in figures["steady"]["adaptive"]
    assert len(figures["table"]) > 10
