"""The Snowflake benchmark in its smoke size: every part runs on the backend under test and finds no repeats."""

import json
import subprocess
import sys

from django.conf import settings

from tests.conftest import ROOT


def test_snowflake_benchmark_smoke_run_completes(tmp_path):
    out = tmp_path / "snowflake.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/snowflake.py", "--smoke", "--db", settings.BACKEND, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    figures = json.loads(out.read_text())
    assert figures["db"] == settings.BACKEND and figures["smoke"] is True
    for kind, run in figures["processes"].items():
        assert run["distinct"] == run["ids"] == 4 * 5_000, kind
    assert figures["inprocess"]["snowflake"] > 0
    assert set(figures["create"]) == {"snowflake", "bigauto", figures["uuid"]}
    assert set(figures["bulk"]) == {"snowflake", "bigauto", figures["uuid"], "counter"}
    assert len(figures["table"]) >= 10
    measures = [row[0] for row in figures["table"]]
    for wanted in ("next_snowflake() ids/s, 1 process", "/ next_value()", f"/ uuid.{figures['uuid']}()",
                   "distinct / taken, 4 processes", "create() rows/s, snowflake key / BigAutoField",
                   f"create() rows/s, {figures['uuid']} key / BigAutoField"):  # fmt: skip
        assert any(wanted in measure for measure in measures), wanted
