"""The benchmarks in their smoke size, run as a user runs them: a script of benchmarks/ in a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings

from tests.conftest import ROOT


def run_benchmark(*args: str) -> subprocess.CompletedProcess[str]:
    """`python SCRIPT ARGS --smoke --db BACKEND` on the backend under test; the test fails if it fails or hangs."""
    done = subprocess.run(
        [sys.executable, *args, "--smoke", "--db", settings.BACKEND],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done


def smoke_figures(script: str, out: Path, *args: str) -> Any:
    """The figures a smoke run of `script` wrote as JSON to `out`."""
    run_benchmark(script, "--json", str(out), *args)
    return json.loads(out.read_text())
