"""A fleet of processes taking blocks of 10 from the table, then from the Redis tier, on one backend.

    ./dev bench redis --db mariadb|postgres [--processes 100] [--seconds 4] [--smoke]
    python benchmarks/redis_fleet.py --db ... [--json PATH]

A private redis-server (no persistence) on a free loopback port. For each path, the parent forks
`--processes` workers that start together, call next_value() for `--seconds`, write every number and
their figures, and wait; then every one of them is killed with SIGKILL. Measured: numbers per
second, database writes per second (the row's version moves once per write), compare-and-sets lost,
and the gap the kill left (the next number handed out afterwards, less the numbers handed out before).
Every number is checked for repeats. Then one process's next_value() on a table row (tier off, tier
on for other rows) and on a tier row. Prints a table and writes benchmarks/results-redis-DB.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import scratch_database, version  # noqa: E402 - after the path that makes it importable

BLOCK = 10
SUPER_STEP = 100_000


def start_redis(workdir: str) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*command, "--dir", workdir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis  # the redis extra

    for _ in range(500):
        try:
            redis.Redis(port=port).ping()
            return proc, port
        except redis.RedisError:
            time.sleep(0.02)
    raise SystemExit("redis-server did not start")


def fleet_settings(port: int, tier: bool) -> dict[str, Any]:
    # No prefetch: each process then needs one database connection (its own), so a fleet fits max_connections.
    settings: dict[str, Any] = {"PREFETCH": False, "ADAPTIVE_STEP": False}
    if tier:
        settings["REDIS"] = {
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "SEQUENCES": ["fleet-redis", "single-redis"],
            "SUPER_STEP": SUPER_STEP,
            "MAX_BLOCK": BLOCK,
        }
    return settings


def child(name: str, seconds: float, out: Path) -> None:
    """A forked worker: one number, "ready", then numbers for `seconds` from the parent's "go"; written; killed."""
    from dataclasses import asdict

    from django_segment_seq import next_value, sequence_stats

    numbers = [next_value(name)]  # the first block (and its connection) before the clock starts
    out.with_suffix(".ready").touch()
    go = out.parent / "go"
    while not go.exists():
        time.sleep(0.005)
    deadline = float(go.read_text()) + seconds
    while time.time() < deadline:
        for _ in range(37):  # not a multiple of the block: a kill finds blocks part used
            numbers.append(next_value(name))
    stats = [asdict(stats) for stats in sequence_stats().values()]
    out.with_suffix(".numbers").write_text("\n".join(map(str, numbers)))
    out.write_text(json.dumps({"count": len(numbers), "stats": stats}))
    while True:
        time.sleep(60)  # holding its cached blocks until the parent kills it


def run_fleet(name: str, processes: int, seconds: float, workdir: Path) -> dict[str, Any]:
    """Fork the fleet, collect what it did, kill it, and measure the gap the kill left."""
    from django.db import connections

    from django_segment_seq import close_connections
    from django_segment_seq.models import Sequence
    from django_segment_seq.redistier import state as redis_state

    Sequence.objects.create(name=name, step=BLOCK)
    close_connections()
    connections.close_all()
    outs, pids = [], []
    (workdir / "go").unlink(missing_ok=True)
    for i in range(processes):
        out = workdir / f"{name}-{i}.json"
        outs.append(out)
        pid = os.fork()
        if pid == 0:
            try:
                child(name, seconds, out)
            finally:
                os._exit(1)
        pids.append(pid)
    deadline = time.time() + 600
    while not all(out.with_suffix(".ready").exists() for out in outs):
        if time.time() > deadline:
            raise SystemExit("the fleet did not start")
        time.sleep(0.05)
    version_before = Sequence.objects.get(name=name).version
    (workdir / "go.tmp").write_text(str(time.time() + 0.2))
    (workdir / "go.tmp").rename(workdir / "go")
    while not all(out.exists() for out in outs):
        if time.time() > deadline:
            raise SystemExit("the fleet did not finish")
        time.sleep(0.1)
    version_after = Sequence.objects.get(name=name).version
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    results = [json.loads(out.read_text()) for out in outs]
    numbers = [int(n) for out in outs for n in out.with_suffix(".numbers").read_text().split()]
    repeats = sum(times - 1 for times in collections.Counter(numbers).values() if times > 1)
    value = Sequence.objects.get(name=name).value
    try:
        held = redis_state.held("default", name)
    except Exception:  # noqa: BLE001 - the table path: nothing in Redis
        held = None
    in_redis = 0 if held is None else held.left + (0 if held.pending is None else held.pending[1] - held.pending[0] + 1)
    handed = len(numbers)
    stats = [stats for result in results for stats in result["stats"]]
    return {
        "processes": processes,
        "seconds": seconds,
        "numbers": handed,
        "numbers_per_second": round(sum(result["count"] - 1 for result in results) / seconds),
        "db_writes": version_after - version_before,
        "db_writes_per_second": round((version_after - version_before) / seconds, 1),
        "cas_lost": sum(s["retries"] for s in stats),
        "redis_takes": sum(s["redis_takes"] for s in stats),
        "redis_refills": sum(s["redis_refills"] for s in stats),
        "redis_fallbacks": sum(s["redis_fallbacks"] for s in stats),
        "repeats": repeats,
        # Numbers the table lent that were neither handed out nor left in Redis: lost with the killed processes.
        "gap_after_kill": value - handed - in_redis,
    }


def single_process(calls: int) -> dict[str, float]:
    """ns per next_value() of one process: a table row with the tier off, with it on (other rows), a tier row."""
    from django.test import override_settings

    from django_segment_seq import clear_cache, next_value

    def timed(name: str) -> float:
        clear_cache()
        next_value(name)
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(calls):
                next_value(name)
            best = min(best, time.perf_counter() - started)
        return round(best / calls * 1e9)

    port = int(os.environ["BENCH_REDIS_PORT"])
    base = {"PREFETCH": True, "ADAPTIVE_STEP": True}
    with override_settings(SEGMENT_SEQ=base):
        table_off = timed("single-table-off")
    tier = fleet_settings(port, True)["REDIS"] | {"MAX_BLOCK": 100}
    with override_settings(SEGMENT_SEQ={**base, "REDIS": tier}):
        table_on = timed("single-table-on")
        on_tier = timed("single-redis")
    return {"table_tier_off_ns": table_off, "table_tier_on_ns": table_on, "tier_row_ns": on_tier}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, choices=["mariadb", "postgres", "sqlite"])
    parser.add_argument("--processes", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--smoke", action="store_true", help="4 processes for 0.5 s: checks that every part runs")
    parser.add_argument("--json", help="where to write the figures (default benchmarks/results-redis-DB.json)")
    args = parser.parse_args()
    if args.smoke:
        args.processes, args.seconds = 4, 0.5
    workdir = Path(tempfile.mkdtemp(prefix="bench-redis-"))
    redis_proc, port = start_redis(str(workdir))
    os.environ["BENCH_REDIS_PORT"] = str(port)
    try:
        with scratch_database(args.db) as connection:
            from django.test import override_settings

            results: dict[str, Any] = {"database": version(connection), "redis_server": redis_version(port)}
            for path, tier in (("table", False), ("redis", True)):
                with override_settings(SEGMENT_SEQ=fleet_settings(port, tier)):
                    results[path] = run_fleet(f"fleet-{path}", args.processes, args.seconds, workdir)
            results["single_process"] = single_process(20_000 if args.smoke else 500_000)
    finally:
        redis_proc.kill()
        redis_proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(args.db, results)
    path = Path(args.json or ROOT / "benchmarks" / f"results-redis-{args.db}.json")
    path.write_text(json.dumps(results, indent=1) + "\n")


def redis_version(port: int) -> str:
    import redis  # the redis extra

    return str(redis.Redis(port=port).info("server")["redis_version"])


def print_table(db: str, results: dict[str, Any]) -> None:
    table, tier = results["table"], results["redis"]
    heading = f"{db} ({results['database']}), Redis {results['redis_server']}"
    print(f"\n{heading}: {table['processes']} processes, blocks of {BLOCK}")
    print("| | table path | Redis tier |\n|---|---:|---:|")
    for key, label in (
        ("numbers_per_second", "numbers/s"),
        ("db_writes_per_second", "database writes/s"),
        ("cas_lost", "compare-and-sets lost"),
        ("repeats", "repeats"),
        ("gap_after_kill", "gap after kill -9 of every process"),
    ):
        print(f"| {label} | {table[key]:,} | {tier[key]:,} |")
    single = results["single_process"]
    print(
        f"one process, next_value(): table row {single['table_tier_off_ns']} ns (tier off), "
        f"{single['table_tier_on_ns']} ns (tier on for other rows), tier row {single['tier_row_ns']} ns"
    )


if __name__ == "__main__":
    main()
