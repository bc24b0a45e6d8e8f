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
    # The Snowflake benchmark runs in the same run, and its table is printed after the sequence table.
    snowflake = figures["snowflake"]
    assert snowflake["processes"]["snowflake"]["distinct"] == snowflake["processes"]["snowflake"]["ids"] == 4 * 5_000
    assert set(snowflake["bulk"]) == {"snowflake", "bigauto", snowflake["uuid"], "counter"}
    assert done.stdout.index("django-segment-seq benchmark on") < done.stdout.index("Snowflake benchmark on")
    assert "next_snowflake() ids/s, 1 process" in done.stdout
    for kind, run in snowflake["processes"].items():
        assert run["distinct"] == run["ids"] == 4 * 5_000, kind
    assert snowflake["inprocess"]["snowflake"] > 0
    assert set(snowflake["create"]) == {"snowflake", "bigauto", snowflake["uuid"]}
    measures = [row[0] for row in snowflake["table"]]
    for wanted in ("next_snowflake() ids/s, 1 process", "/ next_value()", f"/ uuid.{snowflake['uuid']}()",
                   "distinct / taken, 4 processes", "create() rows/s, snowflake key / BigAutoField",
                   f"create() rows/s, {snowflake['uuid']} key / BigAutoField"):  # fmt: skip
        assert any(wanted in measure for measure in measures), wanted


def test_text_benchmark_prints_every_variant_beside_the_plain_format():
    done = subprocess.run(
        [sys.executable, "benchmarks/texts.py", "--count", "50"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-4000:]
    rows = {line[:32].strip(): line.split()[-2:] for line in done.stdout.splitlines()[1:]}
    assert list(rows) == [
        "plain",
        "check_digits=luhn",
        "check_digits=mod97-10",
        "conceal",
        "conceal + check_digits=damm",
    ]
    assert rows["plain"][1] == "1.0" and all(float(micros) > 0 for micros, _ratio in rows.values())
