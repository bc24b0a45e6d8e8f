"""The first next_value() of a fresh process, against the calls after it, on one backend.

    python benchmarks/first_call.py --db sqlite|mariadb|postgres [--processes 20]

The row exists (as in a shop already running); each process, started one after the other, sets Django up, then
times its Django connection, its first number (a range taken: the statements a session's first range sends), its
second (from the cached range) and a third after clear_cache() (a later range: what any range costs), and counts
the statements of the first and the later range. Prints the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import scratch_database, setup_django  # noqa: E402 - after the path that makes it importable

NAME = "first-call"


def child(db: str, name: str) -> None:
    """One fresh process: Django set up, then the connection, the first number and the second, timed."""
    setup_django(db, name)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from django_segment_seq import next_value
    from django_segment_seq.api import clear_cache

    started = time.perf_counter()
    connection.ensure_connection()
    connected = time.perf_counter()
    with CaptureQueriesContext(connection) as first:
        next_value(NAME)
    took_first = time.perf_counter()
    next_value(NAME)
    took_second = time.perf_counter()
    clear_cache()
    with CaptureQueriesContext(connection) as later:
        again = time.perf_counter()
        next_value(NAME)
        took_later = time.perf_counter()
    print(
        json.dumps(
            {
                "connect_ms": (connected - started) * 1000,
                "first_ms": (took_first - connected) * 1000,
                "second_ms": (took_second - took_first) * 1000,
                "later_range_ms": (took_later - again) * 1000,
                "statements": len(first),
                "later_statements": len(later),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, choices=["sqlite", "mariadb", "postgres"])
    parser.add_argument("--processes", type=int, default=20)
    parser.add_argument("--child", metavar="DATABASE_NAME", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.db, args.child)
        return
    with scratch_database(args.db) as connection:
        from django_segment_seq.models import Sequence

        Sequence.objects.create(name=NAME, step=1000)
        name = str(connection.settings_dict["NAME"])
        runs = []
        for _ in range(args.processes):
            done = subprocess.run(
                [sys.executable, __file__, "--db", args.db, "--child", name],
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            )
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    medians = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    print(
        f"{args.db}, median of {len(runs)} processes: Django's connection {medians['connect_ms']:.2f} ms, "
        f"first next_value() {medians['first_ms']:.2f} ms ({medians['statements']:.0f} statements), "
        f"second {medians['second_ms']:.3f} ms, a later range {medians['later_range_ms']:.2f} ms "
        f"({medians['later_statements']:.0f} statements)"
    )


if __name__ == "__main__":
    main()
