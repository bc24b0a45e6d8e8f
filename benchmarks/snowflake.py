"""Benchmark of Snowflake ids against next_value() and UUIDs, and of their INSERTs against BigAutoField, on one backend.

    python benchmarks/snowflake.py --db sqlite|mariadb|postgres [--smoke] [--json PATH]

`./dev bench` runs it too (run() and report() below), after the sequence benchmark, on the same scratch
database. Every figure comes from the same run, and all variants are measured side by side (interleaved
rounds, medians), then printed as one table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import scratch_database, setup_django, start_together, version  # noqa: E402 - after the path that makes it importable

SIZES = {
    # name: (full run, smoke run)
    "inprocess_burst": (100_000, 10_000),
    "inprocess_bursts": (20, 2),
    "js53_ids": (40_000, 2_000),
    "per_process": (250_000, 5_000),
    "create_rows": (300, 20),
    "create_rounds": (5, 2),
    "bulk_rows": (50_000, 3_000),
    "bulk_batch": (1_000, 1_000),
}
PROCESSES = 4
UUID_KIND = "uuid7" if hasattr(uuid, "uuid7") else "uuid4"
new_uuid = getattr(uuid, UUID_KIND)
COMPARED_SEQUENCE = "bench-snowflake-compare"


def size(name: str, smoke: bool) -> int:
    return SIZES[name][1 if smoke else 0]


def takers() -> dict[str, Any]:
    """One id per call, each way compared."""
    from django_segment_seq import next_snowflake, next_value

    return {
        "snowflake": next_snowflake,
        "next_value": lambda: next_value(COMPARED_SEQUENCE),
        UUID_KIND: new_uuid,
    }


# --- worker processes ----------------------------------------------------------------------------


def worker(args: argparse.Namespace) -> None:
    """Take one id (the lease, or the first range), say ready, take `count` after "go", write them all."""
    setup_django(args.db, args.dbname)
    from django_segment_seq import close_connections, release_worker_leases

    take = takers()[args.worker]
    ids = [take()]
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.time()
    ids.extend(take() for _ in range(args.count - 1))
    end = time.time()
    Path(args.out).write_text("\n".join(map(str, ids)))
    print(json.dumps({"start": start, "end": end, "count": len(ids)}), flush=True)
    release_worker_leases()
    close_connections()


def run_processes(db: str, smoke: bool, kind: str, tmp: Path) -> dict[str, Any]:
    """PROCESSES workers released together; every id they took is checked for repeats."""
    from django.db import connection

    outs = [tmp / f"{kind}-{i}.txt" for i in range(PROCESSES)]
    count = size("per_process", smoke)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--db",
                db,
                "--worker",
                kind,
                "--dbname",
                str(connection.settings_dict["NAME"]),
                "--count",
                str(count),
                "--out",
                str(out),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for out in outs
    ]
    try:
        results = start_together(procs, kind)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    ids = [line for out in outs for line in out.read_text().split()]
    for out in outs:
        out.unlink()
    total = sum(r["count"] for r in results)
    seconds = max(r["end"] for r in results) - min(r["start"] for r in results)
    return {
        "processes": PROCESSES,
        "ids": total,
        "distinct": len(set(ids)),
        "seconds": seconds,
        "per_second": total / seconds,
    }


# --- measurements ----------------------------------------------------------------------------------


def bench_inprocess(smoke: bool) -> dict[str, Any]:
    """Ids per second from one thread: short bursts of each way in rotating order, median of the bursts.

    Many short interleaved bursts give every way the same moments of a shared machine.
    """
    from django_segment_seq import next_snowflake
    from django_segment_seq.snowflake import leases

    n = size("inprocess_burst", smoke)
    ways = dict(takers())
    lock, counter = threading.Lock(), itertools.count()

    def bare() -> int:
        with lock:
            return next(counter)

    ways["bare lock+counter"] = bare
    for take in ways.values():
        take()  # the lease and the first range before the clock starts
    trips_before = leases.round_trips
    rates: dict[str, list[float]] = {name: [] for name in ways}
    names = list(ways)
    for burst in range(size("inprocess_bursts", smoke)):
        for name in names[burst % len(names) :] + names[: burst % len(names)]:
            take = ways[name]
            started = time.perf_counter()
            for _ in range(n):
                take()
            rates[name].append(n / (time.perf_counter() - started))
    out: dict[str, Any] = {name: statistics.median(r) for name, r in rates.items()}
    out["best"] = {name: max(r) for name, r in rates.items()}
    out["snowflake_ids"] = n * len(rates["snowflake"])
    out["snowflake_round_trips"] = leases.round_trips - trips_before  # renewals only, every LEASE/6 seconds
    # js53 makes at most 16,384 ids a second per process by design; this shows the cap holds, not speed.
    js = size("js53_ids", smoke)
    next_snowflake(layout="js53")
    started = time.perf_counter()
    for _ in range(js):
        next_snowflake(layout="js53")
    out["snowflake_js53"] = js / (time.perf_counter() - started)
    out["js53_ids"] = js
    return out


def bench_create(smoke: bool) -> dict[str, Any]:
    """create() row by row, Snowflake / BigAutoField / UUID keys in turn (A B C, rotating), median of rounds."""
    from benchmarks.benchapp.models import AutoKeyed, SnowflakeKeyed, UUIDKeyed

    models = {"snowflake": SnowflakeKeyed, "bigauto": AutoKeyed, UUID_KIND: UUIDKeyed}
    rows = size("create_rows", smoke)
    for model in models.values():
        model.objects.create(note="warm-up")
    rates: dict[str, list[float]] = {name: [] for name in models}
    clock = time.perf_counter
    for round_no in range(size("create_rounds", smoke)):
        spent = dict.fromkeys(models, 0.0)
        order = list(models.items())
        order = order[round_no % 3 :] + order[: round_no % 3]
        for _ in range(rows):
            for name, model in order:
                started = clock()
                model.objects.create(note="x")
                spent[name] += clock() - started
        for name in models:
            rates[name].append(rows / spent[name])
    return {name: statistics.median(r) for name, r in rates.items()}


def bench_bulk(smoke: bool) -> dict[str, Any]:
    """bulk_create in batches, the keys in rotating order; rows per second from the median batch.

    "counter" keys are plain integers set before the clock starts, in a BIGINT key column like the
    Snowflake one: the floor cost of sending a key, which separates the column's cost from the ids'.
    """
    from benchmarks.benchapp.models import AutoBulk, CounterBulk, SnowflakeKeyed, UUIDKeyed

    models = {"snowflake": SnowflakeKeyed, "bigauto": AutoBulk, UUID_KIND: UUIDKeyed, "counter": CounterBulk}
    counter = itertools.count(10**15)  # clear of the keys bench.py's own bulk part gives CounterBulk
    rows, batch = size("bulk_rows", smoke), size("bulk_batch", smoke)
    times: dict[str, list[float]] = {name: [] for name in models}
    for batch_no in range(rows // batch):
        order = list(models.items())
        order = order[batch_no % len(order) :] + order[: batch_no % len(order)]
        for name, model in order:
            if model is CounterBulk:
                objs = [model(id=next(counter), note="x") for _ in range(batch)]
            else:
                objs = [model(note="x") for _ in range(batch)]
            started = time.perf_counter()
            model.objects.bulk_create(objs)
            times[name].append(time.perf_counter() - started)
    return {name: batch / statistics.median(spent) for name, spent in times.items()}


# --- report ----------------------------------------------------------------------------------------


def table(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Rows of (measure, value, target, verdict)."""
    inproc, procs, create, bulk = r["inprocess"], r["processes"], r["create"], r["bulk"]
    snow = procs["snowflake"]
    per_process = snow["ids"] // snow["processes"]
    rows = [
        (
            "next_snowflake() ids/s, 1 process (median burst)",
            f"{inproc['snowflake']:,.0f}",
            ">= 1,000,000",
            "ok" if inproc["snowflake"] >= 1_000_000 else "MISSED",
        ),
        ("next_snowflake() ids/s, 1 process (best burst)", f"{inproc['best']['snowflake']:,.0f}", "", ""),
        (
            f"database round trips during those {inproc['snowflake_ids']:,} ids",
            f"{inproc['snowflake_round_trips']}",
            "0 but renewals",
            "",
        ),
        ("next_value() ids/s, 1 process (cached, median burst)", f"{inproc['next_value']:,.0f}", "", ""),
        (f"uuid.{UUID_KIND}() ids/s, 1 process", f"{inproc[UUID_KIND]:,.0f}", "", ""),
        ("bare lock+counter ids/s, 1 process", f"{inproc['bare lock+counter']:,.0f}", "", ""),
        (
            "next_snowflake() / next_value(), 1 process",
            f"{inproc['snowflake'] / inproc['next_value']:.2f} x",
            "",
            "",
        ),
        (
            f"next_snowflake() / uuid.{UUID_KIND}(), 1 process",
            f"{inproc['snowflake'] / inproc[UUID_KIND]:.2f} x",
            "",
            "",
        ),
        (
            f"next_snowflake(layout='js53') ids/s over {inproc['js53_ids']:,} ids",
            f"{inproc['snowflake_js53']:,.0f}",
            "",
            "16,384 a second",
        ),
    ]
    for kind in ("snowflake", "next_value", UUID_KIND):
        p = procs[kind]
        rows.append((f"{kind}: ids/s, {p['processes']} processes x {p['ids'] // p['processes']:,} ids",
                     f"{p['per_second']:,.0f}", "", ""))  # fmt: skip
    rows.append((f"snowflake: distinct / taken, {snow['processes']} processes x {per_process:,} ids",
                 f"{snow['distinct']:,} / {snow['ids']:,}", "all distinct",
                 "ok" if snow["distinct"] == snow["ids"] else "DUPLICATES"))  # fmt: skip
    for kind in ("snowflake", UUID_KIND):
        rows.append((f"create() rows/s, {kind} key / BigAutoField", f"{create[kind]:,.0f} / {create['bigauto']:,.0f}",
                     "", f"{create[kind] / create['bigauto']:.3f} x"))  # fmt: skip
    for kind in ("snowflake", UUID_KIND, "counter"):
        rows.append((f"bulk_create rows/s, {kind} key / BigAutoField", f"{bulk[kind]:,.0f} / {bulk['bigauto']:,.0f}",
                     "", f"{bulk[kind] / bulk['bigauto']:.3f} x"))  # fmt: skip
    rows.append(("bulk_create rows/s, snowflake key / counter key",
                 f"{bulk['snowflake']:,.0f} / {bulk['counter']:,.0f}", "",
                 f"{bulk['snowflake'] / bulk['counter']:.3f} x"))  # fmt: skip
    return rows


def run(db: str, smoke: bool) -> dict[str, Any]:
    """Every measurement, on the scratch database Django is set up with; the worker ids are given back at the end."""
    import tempfile

    from django.db import connection

    from django_segment_seq import release_worker_leases
    from django_segment_seq.models import Sequence

    try:
        started = time.time()
        results: dict[str, Any] = {"db": db, "vendor_version": version(connection), "smoke": smoke,
                                   "cpus": os.cpu_count(), "uuid": UUID_KIND,
                                   "load_average_at_start": os.getloadavg()[0]}  # fmt: skip
        Sequence.objects.get_or_create(name=COMPARED_SEQUENCE, defaults={"step": 1000})
        results["inprocess"] = bench_inprocess(smoke)
        with tempfile.TemporaryDirectory() as tmp:
            results["processes"] = {kind: run_processes(db, smoke, kind, Path(tmp)) for kind in takers()}
        results["create"] = bench_create(smoke)
        results["bulk"] = bench_bulk(smoke)
        results["seconds"] = time.time() - started
    finally:
        release_worker_leases()
    results["table"] = [list(row) for row in table(results)]
    return results


def report(results: dict[str, Any]) -> None:
    """Print the table run() made."""
    rows = results["table"]
    width = max(len(row[0]) for row in rows)
    print(f"\nSnowflake benchmark on {results['db']} ({results['vendor_version']}), {results['cpus']} CPUs"
          f"{', smoke size' if results['smoke'] else ''}, {results['seconds']:.0f} s, "
          f"load average {results['load_average_at_start']:.1f} at start")  # fmt: skip
    for measure, value, target, verdict in rows:
        print(f"  {measure:<{width}}  {value:>22}  {target:>14}  {verdict}")


def all_distinct(results: dict[str, Any]) -> bool:
    snow = results["processes"]["snowflake"]
    return bool(snow["distinct"] == snow["ids"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, choices=["sqlite", "mariadb", "postgres"])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks that every part runs")
    parser.add_argument("--json", help="where to also write the figures")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--dbname", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    with scratch_database(args.db):
        results = run(args.db, args.smoke)
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all_distinct(results) else 1


if __name__ == "__main__":
    sys.exit(main())
