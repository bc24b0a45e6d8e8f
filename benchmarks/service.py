"""The ID service's throughput: requests and numbers a second, p50/p99 latency, from 1 and 16 callers, blocks of 1
and 100, beside the same callers opening the database themselves (next_values() in their own process).

    ./dev bench service --db sqlite|mariadb|postgres [--seconds 3] [--smoke] [--json PATH]
    python benchmarks/service.py --db ...

The service runs under gunicorn (4 sync workers) with the project's default settings (prefetch and the
adaptive step on), on a scratch database; each caller is a process of its own, sending one request at a
time on a new connection (as sync gunicorn closes each). Every block is collected and checked for repeats.
Writes benchmarks/results-service-DB.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.id_service import LiveServer  # noqa: E402 - after the path that makes it importable

CALLERS = (1, 16)
BLOCKS = (1, 100)
SAMPLE = 20_000  # latencies each caller reports, evenly spaced among its calls


# --- callers ---------------------------------------------------------------------------------


def runs(blocks: list[tuple[int, int]]) -> list[list[int]]:
    """Contiguous blocks merged, so a caller that took a million numbers one by one reports a few ranges."""
    merged: list[list[int]] = []
    for first, last in blocks:
        if merged and merged[-1][1] + 1 == first:
            merged[-1][1] = last
        else:
            merged.append([first, last])
    return merged


def caller(mode: str, target: str, token: str, count: int, seconds: float) -> None:
    """One caller process: wait for "go", take blocks for `seconds`, print one JSON line."""
    if mode == "direct":
        import django

        django.setup()
        from django_segment_seq import next_values

        next_values(target, count)  # the row and the first range, before the clock starts

        def take() -> tuple[int, int]:
            numbers = next_values(target, count)
            return numbers[0], numbers[-1]
    else:
        import http.client

        host, port = target.split("/")[2].split(":")
        path = "/" + target.split("/", 3)[3]
        body = json.dumps({"count": count})
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        def take() -> tuple[int, int]:
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            conn.request("POST", path, body, headers)
            response = conn.getresponse()
            answer = json.loads(response.read())
            conn.close()
            if response.status != 200:
                raise RuntimeError(f"{response.status}: {answer}")
            return answer["first"], answer["last"]

    print("ready", flush=True)
    sys.stdin.readline()
    latencies: list[float] = []
    blocks: list[tuple[int, int]] = []
    clock = time.perf_counter
    stop = clock() + seconds
    while True:
        started = clock()
        if started >= stop:
            break
        blocks.append(take())
        latencies.append(clock() - started)
    step = max(1, len(latencies) // SAMPLE)
    print(json.dumps({"calls": len(latencies), "latencies": latencies[::step], "runs": runs(blocks)}), flush=True)


# --- the run ---------------------------------------------------------------------------------


def scratch_env(db: str) -> dict[str, str]:
    """A scratch database of `db`, migrated, and the environment that points the test project at it."""
    name = f"bench_service_{os.getpid()}"
    if db == "sqlite":
        name = os.path.join(tempfile.gettempdir(), name + ".sqlite3")
    elif db == "mariadb":
        import MySQLdb

        MySQLdb.connect(host="127.0.0.1", user="root").cursor().execute(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
    else:
        import psycopg

        with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="tests.service_project.settings",
        SEGMENT_SEQ_TEST_DB=db,
        SEGMENT_SEQ_TEST_DB_NAME=name,
        SEGMENT_SEQ_TEST_PREFETCH="1",  # the defaults a project runs with: prefetch and the adaptive step
        SERVICE_CACHE_DIR=tempfile.mkdtemp(prefix="bench_service_cache"),
        PYTHONPATH=str(ROOT),
    )
    django = [sys.executable, "-m", "django"]
    subprocess.run([*django, "migrate", "--run-syncdb", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300)
    out = subprocess.run(
        [*django, "segment_seq", "client", "add", "bench", "--sequences", "*", "--max-count", "1000",
         "--create-rows", "10"],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    env["BENCH_TOKEN"] = re.findall(r"ssq_\S+", out.stdout)[-1]
    out = subprocess.run(
        [*django, "segment_seq", "client", "add", "bench-rated", "--sequences", "*", "--max-count", "1000",
         "--create-rows", "10", "--rate", "1000000/s"],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    env["BENCH_RATED_TOKEN"] = re.findall(r"ssq_\S+", out.stdout)[-1]  # a client with a rate it never reaches
    return env


def drop(db: str, env: dict[str, str]) -> None:
    """Drop the scratch database, trying again for a minute while the server refuses new sessions."""
    shutil.rmtree(env["SERVICE_CACHE_DIR"], ignore_errors=True)
    for attempt in range(30):
        try:
            drop_once(db, env["SEGMENT_SEQ_TEST_DB_NAME"])
            return
        except Exception:
            if attempt == 29:
                raise
            time.sleep(2)


def drop_once(db: str, name: str) -> None:
    if db == "sqlite":
        Path(name).unlink(missing_ok=True)
    elif db == "mariadb":
        import MySQLdb

        MySQLdb.connect(host="127.0.0.1", user="root").cursor().execute(f"DROP DATABASE IF EXISTS {name}")
    else:
        import psycopg

        with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def measure(mode: str, target: str, env: dict[str, str], callers: int, count: int, seconds: float) -> dict[str, Any]:
    args = [
        sys.executable,
        __file__,
        "--caller",
        mode,
        "--target",
        target,
        "--count",
        str(count),
        "--seconds",
        str(seconds),
    ]
    procs = [
        subprocess.Popen(args, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(callers)
    ]
    for proc in procs:
        if proc.stdout.readline().strip() != "ready":  # type: ignore[union-attr]
            raise RuntimeError(f"a {mode} caller did not start (exit {proc.wait(60)})")
    for proc in procs:
        proc.stdin.write("go\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=seconds + 120)
        if proc.returncode != 0:
            raise RuntimeError(f"a {mode} caller failed (exit {proc.returncode})")
        results.append(json.loads(out.strip().splitlines()[-1]))
    calls = sum(result["calls"] for result in results)
    latencies = sorted(value for result in results for value in result["latencies"])
    spans = sorted((first, last) for result in results for first, last in result["runs"])
    overlaps, reached = 0, -1
    for first, last in spans:  # a block starting at or below the highest number seen so far repeats one
        overlaps += first <= reached
        reached = max(reached, last)
    return {
        "mode": mode,
        "callers": callers,
        "block": count,
        "requests_per_s": round(calls / seconds),
        "numbers_per_s": round(calls * count / seconds),
        "p50_ms": round(statistics.quantiles(latencies, n=100)[49] * 1000, 3) if len(latencies) > 1 else None,
        "p99_ms": round(statistics.quantiles(latencies, n=100)[98] * 1000, 3) if len(latencies) > 1 else None,
        "overlapping_blocks": overlaps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "mariadb", "postgres"])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--smoke", action="store_true", help="half a second per figure")
    parser.add_argument("--json", help="default benchmarks/results-service-DB.json")
    parser.add_argument("--caller", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.caller:
        caller(args.caller, args.target, os.environ.get("BENCH_TOKEN", ""), args.count, args.seconds)
        return
    if not args.db:
        parser.error("--db is required")
    seconds = 0.5 if args.smoke else args.seconds
    env = scratch_env(args.db)
    log = Path(tempfile.gettempdir()) / f"bench_service_{os.getpid()}.log"
    server = LiveServer("gunicorn", env, log, workers=4)
    rows = []
    try:
        server.start()
        for callers in CALLERS:
            for count in BLOCKS:
                rows.append(measure("http", f"{server.url}bench-http-{count}/next", env, callers, count, seconds))
                rows.append(measure("direct", f"bench-direct-{count}", env, callers, count, seconds))
                print(json.dumps(rows[-2]), json.dumps(rows[-1]), sep="\n", flush=True)
    finally:
        server.stop()
        drop(args.db, env)
        log.unlink(missing_ok=True)
    report = {
        "db": args.db,
        "cpus": os.cpu_count(),
        "seconds": seconds,
        "server": "gunicorn, 4 sync workers",
        "rows": rows,
    }
    path = Path(args.json or ROOT / "benchmarks" / f"results-service-{args.db}.json")
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(
        f"\n{'mode':7} {'callers':>7} {'block':>5} {'req/s':>9} {'numbers/s':>11} {'p50 ms':>8} {'p99 ms':>8} repeats"
    )
    for row in rows:
        print(
            f"{row['mode']:7} {row['callers']:>7} {row['block']:>5} {row['requests_per_s']:>9,} "
            f"{row['numbers_per_s']:>11,} {row['p50_ms']:>8} {row['p99_ms']:>8} {row['overlapping_blocks']}"
        )


if __name__ == "__main__":
    main()
