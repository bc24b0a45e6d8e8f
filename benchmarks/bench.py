"""Benchmark of django-segment-seq against a bare counter, AutoField and django-sequences, on one backend.

    ./dev bench --db sqlite|mariadb|postgres [--smoke] [--json PATH]

Creates a scratch database (removed at the end), runs every measurement in the same run so the
ratios compare like with like, prints a table and writes the figures as JSON. The Snowflake
benchmark (benchmarks/snowflake.py) runs in the same run and database, and its table is printed
next to the sequence table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import connections, gaps, snowflake  # noqa: E402 - after the path that makes it importable
from benchmarks.common import scratch_database, setup_django, start_together, version  # noqa: E402 - after the path that makes it importable

SIZES = {
    # name: (full run, smoke run)
    "inprocess_numbers": (2_000_000, 20_000),
    "inprocess_rounds": (5, 2),
    "numbers_per_run": (2_000_000, 20_000),  # next_value() across 1 or 4 processes
    "djseq_per_process": (1_500, 30),
    "create_rows": (500, 20),
    "create_rounds": (7, 2),
    "bulk_rows": (100_000, 3_000),
    "bulk_batch": (1_000, 1_000),
    "steady_numbers": (1_000_000, 20_000),
}


def size(name: str, smoke: bool) -> int:
    return SIZES[name][1 if smoke else 0]


# --- worker processes ------------------------------------------------------------------------


def worker(args: argparse.Namespace) -> None:
    """Take numbers one way, after the parent says go; print what it took and this process's figures."""
    setup_django(args.db, args.dbname, json.loads(args.segment_seq))
    from dataclasses import asdict

    from django.db import OperationalError
    from sequences import get_next_value

    from django_segment_seq import next_value, sequence_stats
    from django_segment_seq.compat.sequences import get_next_value as compat_next_value

    locked = 0

    def retried(get: Any) -> Any:
        def take(name: str) -> int:
            # On SQLite a read-then-write transaction fails at once with "database is locked" when another
            # process writes; a caller has to retry, and the count of those is reported.
            nonlocal locked
            while True:
                try:
                    return int(get(name))
                except OperationalError:
                    locked += 1
                    time.sleep(0.001)

        return take

    take = {"seq": next_value, "djseq": retried(get_next_value), "compat": retried(compat_next_value)}[args.worker]
    take(args.name)  # the row and, for next_value(), the first range: every process starts with one
    at_start = {f"{a}:{n}": asdict(s) for (a, n), s in sequence_stats().items()}
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.time()
    for _ in range(args.count):
        take(args.name)
    end = time.time()
    figures = {f"{a}:{n}": asdict(s) for (a, n), s in sequence_stats().items()}
    result = {"count": args.count, "start": start, "end": end, "stats": figures, "at_start": at_start, "locked": locked}
    print(json.dumps(result), flush=True)


def run_processes(
    args: argparse.Namespace,
    kind: str,
    name: str,
    processes: int,
    count: int,
    segment_seq: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Start `processes` workers, release them together, and sum what they did."""
    from django.db import connection

    command = [
        sys.executable, __file__, "--db", args.db, "--worker", kind, "--dbname", str(connection.settings_dict["NAME"]),
        "--name", name, "--count", str(count), "--segment-seq", json.dumps(segment_seq or {}),
    ]  # fmt: skip
    procs = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        for _ in range(processes)
    ]
    results = start_together(procs, kind)
    total = sum(r["count"] for r in results)
    elapsed = max(r["end"] for r in results) - min(r["start"] for r in results)
    summary: dict[str, Any] = {
        "processes": processes,
        "numbers": total,
        "seconds": elapsed,
        "per_second": total / elapsed,
    }
    summary["database_locked_retries"] = sum(r["locked"] for r in results)
    if kind == "seq":
        figures = [r["stats"][f"default:{name}"] for r in results]
        before = [r["at_start"][f"default:{name}"] for r in results]
        for key in (
            "ranges_fetched",
            "retries",
            "round_trips",
            "foreground_fetches",
            "background_fetches",
            "waits_for_background",
        ):
            summary[key] = sum(f[key] for f in figures)
            # After the start-up fetch of each process (all four hit the row at the same instant).
            summary[f"{key}_after_start"] = summary[key] - sum(f[key] for f in before)
        summary["largest_step"] = max(f["step"] for f in figures)
    return summary


# --- measurements ------------------------------------------------------------------------------


def bench_inprocess(smoke: bool) -> dict[str, Any]:
    """A bare lock + counter loop against cached next_value(), interleaved, median of rounds."""
    from django_segment_seq import next_value

    n = size("inprocess_numbers", smoke)
    name = "bench-inprocess"
    next_value(name)

    def bare() -> float:
        lock, counter = threading.Lock(), itertools.count(1)
        started = time.perf_counter()
        for _ in range(n):
            with lock:
                next(counter)
        return n / (time.perf_counter() - started)

    def cached() -> float:
        take = next_value
        started = time.perf_counter()
        for _ in range(n):
            take(name)
        return n / (time.perf_counter() - started)

    bare_rates, cached_rates, ratios = [], [], []
    for _ in range(size("inprocess_rounds", smoke)):
        b, c = bare(), cached()
        bare_rates.append(b)
        cached_rates.append(c)
        ratios.append(c / b)
    return {
        "bare_per_second": statistics.median(bare_rates),
        "cached_per_second": statistics.median(cached_rates),
        "ratio": statistics.median(ratios),
    }


def bench_processes(args: argparse.Namespace) -> dict[str, Any]:
    """next_value() from 1 and 4 processes against django-sequences' get_next_value() from as many."""
    from django_segment_seq.models import Sequence

    smoke = args.smoke
    total = size("numbers_per_run", smoke)
    out: dict[str, Any] = {}
    for processes in (1, args.processes):
        for label, options in (("", {}), ("_fixed_step", {"ADAPTIVE_STEP": False})):
            if label and processes == 1:
                continue
            name = f"bench-p{processes}{label}"
            Sequence.objects.create(name=name, step=1000)
            ours = run_processes(args, "seq", name, processes, total // processes, options)
            ours["allocations"] = ours["ranges_fetched"] + ours["retries"]
            ours["allocation_bound"] = math.ceil(ours["numbers"] / 1000) + processes
            ours["retry_share"] = ours["retries"] / ours["allocations"]
            after = ours["ranges_fetched_after_start"] + ours["retries_after_start"]
            ours["retry_share_after_start"] = ours["retries_after_start"] / after if after else 0.0
            ours["round_trips_per_million"] = ours["round_trips"] * 1_000_000 / ours["numbers"]
            out[f"segment_seq_{processes}{label}"] = ours
        theirs = run_processes(args, "djseq", f"bench-djseq-{processes}", processes, size("djseq_per_process", smoke))
        out[f"django_sequences_{processes}"] = theirs
        compat = run_processes(args, "compat", f"bench-compat-{processes}", processes, size("djseq_per_process", smoke))
        out[f"compat_{processes}"] = compat
        out[f"ratio_{processes}"] = out[f"segment_seq_{processes}"]["per_second"] / theirs["per_second"]
    return out


def bench_create(smoke: bool) -> dict[str, Any]:
    """Model.objects.create() keyed by a SequenceField against an AutoField, row by row A B A B, median of rounds.

    Alternating single rows gives both models the same moments of the shared machine (each
    create() is one commit, and commit times swing with the disk), so the ratio of a round's
    totals compares like with like.
    """
    from benchmarks.benchapp.models import AutoKeyed, SeqKeyed

    rows = size("create_rows", smoke)
    clock = time.perf_counter
    SeqKeyed.objects.create(note="warm-up")
    AutoKeyed.objects.create(note="warm-up")
    ratios, seq_rates, auto_rates = [], [], []
    for round_no in range(size("create_rounds", smoke)):
        spent = {SeqKeyed: 0.0, AutoKeyed: 0.0}
        order = (SeqKeyed, AutoKeyed) if round_no % 2 == 0 else (AutoKeyed, SeqKeyed)
        for _ in range(rows):
            for model in order:
                started = clock()
                model.objects.create(note="x")
                spent[model] += clock() - started
        seq_rates.append(rows / spent[SeqKeyed])
        auto_rates.append(rows / spent[AutoKeyed])
        ratios.append(spent[AutoKeyed] / spent[SeqKeyed])
    return {
        "rounds": len(ratios),
        "rows_per_round": rows,
        "ratios": ratios,
        "sequence_per_second": statistics.median(seq_rates),
        "auto_per_second": statistics.median(auto_rates),
        "ratio": statistics.median(ratios),
    }


def bench_bulk(smoke: bool) -> dict[str, Any]:
    """bulk_create in batches: SequenceField keys through each kind of manager, AutoField and keys from a counter."""
    from benchmarks.benchapp.models import AutoBulk, CounterBulk, SeqBulk, SeqBulkDefault, SeqBulkOwnManager
    from django_segment_seq import sequence_stats

    rows, batch = size("bulk_rows", smoke), size("bulk_batch", smoke)
    counter = itertools.count(1)

    # Objects are built before the clock starts (the counter's keys with them): the clock measures
    # bulk_create alone, which for SequenceField keys includes taking the numbers.
    variants = [
        # The manager Django adds, switched to SequenceManager's bulk_create (see defaultmanager).
        ("default", SeqBulkDefault, lambda: [SeqBulkDefault(note="x") for _ in range(batch)]),
        ("sequence_manager", SeqBulk, lambda: [SeqBulk(note="x") for _ in range(batch)]),
        # A manager of the project's own: one number per object in pre_save.
        ("own_manager", SeqBulkOwnManager, lambda: [SeqBulkOwnManager(note="x") for _ in range(batch)]),
        ("auto", AutoBulk, lambda: [AutoBulk(note="x") for _ in range(batch)]),
        ("counter", CounterBulk, lambda: [CounterBulk(id=next(counter), note="x") for _ in range(batch)]),
    ]
    sequences = {"default": "bench-bulk-default", "sequence_manager": "bench-bulk", "own_manager": "bench-bulk-own"}
    times: dict[str, list[float]] = {label: [] for label, _, _ in variants}
    # A new order each round (the same in every run): a variant never always follows the same other one.
    order = random.Random(0)
    for _ in range(rows // batch):
        for label, model, build in order.sample(variants, len(variants)):
            objs = build()
            started = time.perf_counter()
            model.objects.bulk_create(objs)
            times[label].append(time.perf_counter() - started)
    median = {label: statistics.median(spent) for label, spent in times.items()}

    def paired(other: str, label: str) -> float:
        # Each batch against the other variant's batch of the same round: a slow spell of the shared
        # machine hits both, so the median of these paired ratios is the steadiest figure.
        return statistics.median(t_other / t_seq for t_other, t_seq in zip(times[other], times[label], strict=True))

    figures = sequence_stats()
    return {
        "rows": rows,
        "batch": batch,
        "seconds": {label: sum(spent) for label, spent in times.items()},
        "median_batch_seconds": median,
        "ratio_to_counter": {label: paired("counter", label) for label in sequences},
        "ratio_to_auto": {label: paired("auto", label) for label in sequences},
        "ratio_of_medians_to_counter": {label: median["counter"] / median[label] for label in sequences},
        "allocations": {
            label: figures[("default", name)].ranges_fetched + figures[("default", name)].retries
            for label, name in sequences.items()
        },
        "blocking_fetches": {label: figures[("default", name)].blocking_fetches for label, name in sequences.items()},
        "stored": [model.objects.count() for _, model, _ in variants],
    }


def bench_steady(smoke: bool) -> dict[str, Any]:
    """A steady demand with prefetch on: blocking fetches and round trips per 1,000,000 numbers after warm-up."""
    from django.test.utils import override_settings

    from django_segment_seq import next_value, sequence_stats, wait_for_prefetch
    from django_segment_seq.models import Sequence

    out = {}
    for label, options, total in (
        ("adaptive", {}, size("steady_numbers", smoke)),
        ("fixed_step", {"ADAPTIVE_STEP": False}, size("steady_numbers", smoke) // 5),
    ):
        name = f"bench-steady-{label}"
        Sequence.objects.create(name=name, step=1000)
        with override_settings(SEGMENT_SEQ=options):
            chunk, pause = 200, 0.001  # about 100,000-150,000 numbers a second
            warm_up = total // 10
            for _ in range(warm_up):
                next_value(name)
            wait_for_prefetch()
            before = sequence_stats()[("default", name)]
            started = time.perf_counter()
            for _ in range((total - warm_up) // chunk):
                for _ in range(chunk):
                    next_value(name)
                time.sleep(pause)
            seconds = time.perf_counter() - started
            after = sequence_stats()[("default", name)]
        numbers = after.handed_out - before.handed_out
        out[label] = {
            "numbers_after_warm_up": numbers,
            "per_second": numbers / seconds,
            "blocking_fetches": after.blocking_fetches - before.blocking_fetches,
            "blocking_per_million": (after.blocking_fetches - before.blocking_fetches) * 1_000_000 / numbers,
            "background_fetches": after.background_fetches - before.background_fetches,
            "round_trips_per_million": (after.round_trips - before.round_trips) * 1_000_000 / numbers,
            "step_at_end": after.step,
        }
    return out


# --- report -------------------------------------------------------------------------------------


def table(db: str, r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Rows of (measure, value, target, verdict)."""
    p = r["processes"]
    n = p["segment_seq_1"]["processes"], p.get("segment_seq_4", p["segment_seq_1"])
    four = n[1]
    fixed = p.get("segment_seq_4_fixed_step", four)

    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    rows = [
        (
            "cached next_value() / bare lock+counter",
            f"{r['inprocess']['ratio']:.2f} x",
            ">= 0.5 x",
            verdict(r["inprocess"]["ratio"] >= 0.5),
        ),
        ("next_value() numbers/s, 1 process", f"{p['segment_seq_1']['per_second']:,.0f}", "", ""),
        ("django-sequences numbers/s, 1 process", f"{p['django_sequences_1']['per_second']:,.0f}", "", ""),
        ("next_value() / django-sequences, 1 process", f"{p['ratio_1']:,.0f} x", "", ""),
        ("compat.sequences (gapless) numbers/s, 1 process", f"{p['compat_1']['per_second']:,.0f}", "", ""),
        (f"next_value() numbers/s, {four['processes']} processes", f"{four['per_second']:,.0f}", "", ""),
        (
            f"django-sequences numbers/s, {four['processes']} processes",
            f"{p['django_sequences_4']['per_second']:,.0f}",
            "",
            "",
        ),
        (
            f"compat.sequences (gapless) numbers/s, {four['processes']} processes",
            f"{p['compat_4']['per_second']:,.0f}",
            "",
            "",
        ),
        (
            f"next_value() / django-sequences, {four['processes']} processes",
            f"{p['ratio_4']:,.0f} x",
            ">= 500 x",
            verdict(p["ratio_4"] >= 500) if db != "sqlite" else "(MariaDB/PostgreSQL)",
        ),
        (
            f"retries / allocations, {four['processes']} processes, adaptive step",
            f"{four['retry_share']:.1%}",
            "<= 10%",
            verdict(four["retry_share"] <= 0.10),
        ),
        (
            "retries / allocations, adaptive, after first ranges",
            f"{four['retry_share_after_start']:.1%}",
            "<= 10%",
            verdict(four["retry_share_after_start"] <= 0.10),
        ),
        (
            f"retries / allocations, {four['processes']} processes, fixed step 1000",
            f"{fixed['retry_share']:.1%}",
            "<= 10%",
            verdict(fixed["retry_share"] <= 0.10),
        ),
        (
            "allocations, adaptive step (bound ceil(N/1000)+P)",
            f"{four['allocations']} / {four['allocation_bound']}",
            "<= bound",
            verdict(four["allocations"] <= four["allocation_bound"]),
        ),
        (
            "allocations, fixed step 1000 (bound ceil(N/1000)+P)",
            f"{fixed['allocations']} / {fixed['allocation_bound']}",
            "<= bound",
            verdict(fixed["allocations"] <= fixed["allocation_bound"]),
        ),
        ("round trips per 1M numbers, 4 processes, adaptive", f"{four['round_trips_per_million']:,.0f}", "", ""),
        ("round trips per 1M numbers, 4 processes, fixed step", f"{fixed['round_trips_per_million']:,.0f}", "", ""),
        (
            "create(): SequenceField key / AutoField (median)",
            f"{r['create']['ratio']:.3f} x",
            ">= 0.95 x",
            verdict(r["create"]["ratio"] >= 0.95),
        ),
        *bulk_rows(r["bulk"], verdict),
    ]
    for label, s in r["steady"].items():
        rows.append(
            (
                f"steady demand, {label}: blocking fetches per 1M",
                f"{s['blocking_per_million']:.0f}",
                "0",
                # No background fetch on a SQLite file the tables share (docs/how-it-works.md), by design.
                verdict(s["blocking_fetches"] == 0) if db != "sqlite" else "(MariaDB/PostgreSQL)",
            )
        )
        rows.append((f"steady demand, {label}: round trips per 1M", f"{s['round_trips_per_million']:,.0f}", "", ""))
    return rows


def bulk_rows(bulk: dict[str, Any], verdict: Callable[[bool], str]) -> list[tuple[str, str, str, str]]:
    """The bulk_create rows of the table: each manager against counter keys, and its allocations."""
    calls = bulk["rows"] // bulk["batch"]
    names = {"default": "default manager", "sequence_manager": "SequenceManager", "own_manager": "own Manager subclass"}
    rows = []
    for label, name in names.items():
        target = ">= 0.95 x" if label != "own_manager" else "reported"
        ratio = bulk["ratio_to_counter"][label]
        rows.append(
            (
                f"bulk_create, {name}: SequenceField keys / counter keys (paired median)",
                f"{ratio:.3f} x",
                target,
                verdict(ratio >= 0.95) if label != "own_manager" else "",
            )
        )
    for label, name in names.items():
        allocations = bulk["allocations"][label]
        per_call = label != "own_manager"
        rows.append(
            (
                f"bulk_create, {name}: allocations for {calls} calls",
                f"{allocations}",
                "1 per call at most" if per_call else "reported",
                verdict(allocations <= calls) if per_call else "",
            )
        )
    rows.append(
        (
            "bulk_create, default manager: SequenceField keys / AutoField (paired median)",
            f"{bulk['ratio_to_auto']['default']:.3f} x",
            "reported",
            "",
        )
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, choices=["sqlite", "mariadb", "postgres"])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks that every part runs")
    parser.add_argument("--json", help="where to write the figures (default benchmarks/results-DB.json)")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument(
        "--only",
        help="comma-separated parts to run, printed as JSON (no table, no file); "
        "'connections' (also part of a full run, not of --smoke) prints its table and writes "
        "results-connections-DB.json; 'gaps' (only when named) prints its table and writes results-gaps-DB.json",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--dbname", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--segment-seq", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    with scratch_database(args.db) as connection:
        started = time.time()
        results: dict[str, Any] = {"db": args.db, "vendor_version": version(connection), "smoke": args.smoke,
                                   "cpus": os.cpu_count()}  # fmt: skip
        parts = {
            "inprocess": lambda: bench_inprocess(args.smoke),
            "processes": lambda: bench_processes(args),
            "create": lambda: bench_create(args.smoke),
            "bulk": lambda: bench_bulk(args.smoke),
            "steady": lambda: bench_steady(args.smoke),
            "snowflake": lambda: snowflake.run(args.db, args.smoke),
        }
        if not args.smoke or (args.only and "connections" in args.only.split(",")):
            # Extra sessions per process and a 96-process start (not in the smoke run the test suite makes,
            # which has its own test of it); it prints and writes its own report.
            parts["connections"] = lambda: connections.run(
                args.db, str(connection.settings_dict["NAME"]), smoke=args.smoke
            )
        if args.only and "gaps" in args.only.split(","):
            # A million rows written and read: asked for by name only, and it prints and writes its own report.
            parts["gaps"] = lambda: gaps.run(args.db, args.smoke)
        for part, run in parts.items():
            if not args.only or part in args.only.split(","):
                results[part] = run()
        results["seconds"] = time.time() - started
    if args.only:
        if "connections" in results:
            connections.report(results.pop("connections"), args.json)
        if "gaps" in results:
            gaps.report(results.pop("gaps"), args.json)
        if set(args.only.split(",")) - {"connections", "gaps"}:
            print(json.dumps({k: v for k, v in results.items() if k in args.only.split(",")}, indent=1))
        return
    if "connections" in results:
        connections.report(results.pop("connections"))  # its own table and results-connections-DB.json
    rows = table(args.db, results)
    results["table"] = [list(row) for row in rows]
    width = max(len(row[0]) for row in rows)
    print(f"\ndjango-segment-seq benchmark on {args.db} ({results['vendor_version']}), {os.cpu_count()} CPUs"
          f"{', smoke size' if args.smoke else ''}")  # fmt: skip
    for measure, value, target, verdict in rows:
        print(f"  {measure:<{width}}  {value:>16}  {target:>18}  {verdict}")
    snowflake.report(results["snowflake"])
    path = Path(args.json) if args.json else ROOT / "benchmarks" / f"results-{args.db}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nfigures written to {path}")
    if not snowflake.all_distinct(results["snowflake"]):
        raise SystemExit("Snowflake ids repeated across processes")


if __name__ == "__main__":
    main()
