"""The gap report (`manage.py segment_seq gaps`) on a table of 1,000,000 numbers with 1% missing, on one backend.

    ./dev bench --db sqlite|mariadb|postgres --only gaps [--smoke]
    python benchmarks/gaps.py --db ... [--smoke] [--json PATH]

The rows are written by the database itself in one statement (generate_series on PostgreSQL,
MariaDB's seq_1_to_N table, a recursive CTE on SQLite): every number from 1 up except the multiples
of 100, so 1% is missing, as 10,000 single gaps; 100 of them are voided. Then the report is timed
on an integer field (the database finds the gaps with LEAD) and on a formatted field with a yearly
reset (the texts are streamed and read back in Python). Prints a table and writes
benchmarks/results-gaps-DB.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import scratch_database, version  # noqa: E402 - after the path that makes it importable

# name: (full run, smoke run): how many rows are stored.
ROWS = {"full": 1_000_000, "smoke": 2_000}
VOIDED = 100
YEAR = 2026


def highest_for(rows: int) -> int:
    """The highest number when every multiple of 100 below it is left out and `rows` remain."""
    return rows + rows // 99


def fill(connection: Any, table: str, column: str, highest: int, *, text: bool) -> None:
    """Insert 1..highest but the multiples of 100 in one statement the database runs itself."""
    quote = connection.ops.quote_name
    target = f"INSERT INTO {quote(table)} ({quote(column)}) "
    if connection.vendor == "postgresql":
        value = f"'INV{YEAR}-' || lpad(n::text, 7, '0')" if text else "n"
        sql = f"{target}SELECT {value} FROM generate_series(1, {highest}) AS n WHERE n % 100 <> 0"
    elif connection.vendor == "mysql":
        value = f"CONCAT('INV{YEAR}-', LPAD(seq, 7, '0'))" if text else "seq"
        sql = f"{target}SELECT {value} FROM seq_1_to_{highest} WHERE seq % 100 <> 0"
    else:
        value = f"'INV{YEAR}-' || printf('%07d', n)" if text else "n"
        sql = (
            f"WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < {highest}) "
            f"{target}SELECT {value} FROM c WHERE n % 100 <> 0"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql)


def measure(connection: Any, label: str, model: Any, column: str, highest: int, *, text: bool) -> dict[str, Any]:
    """Fill the table, void some gaps, and time the report; the rows and gaps it found are checked."""
    from django_segment_seq import next_values, void
    from django_segment_seq.audit.gaps import gap_report

    started = time.perf_counter()
    fill(connection, model._meta.db_table, column, highest, text=text)
    filled = time.perf_counter() - started
    next_values(f"bench-gaps-text@{YEAR}" if text else "bench-gaps", highest)  # the counter handed them all out
    voided = min(VOIDED, highest // 200)  # the smoke run has 20 gaps
    for number in range(100, 100 * voided + 1, 100):
        void(label, f"INV{YEAR}-{number:07d}" if text else number, "cancelled draft")
    started = time.perf_counter()
    report = gap_report(label)
    seconds = time.perf_counter() - started
    [series] = report.series
    expected_gaps = highest // 100
    if (series.voided_count, series.unexplained_count) != (voided, expected_gaps - voided):
        raise SystemExit(f"{label}: found {series.voided_count} voided and {series.unexplained_count} unexplained")
    return {
        "rows": series.stored,
        "gaps": expected_gaps,
        "voided": series.voided_count,
        "fill_seconds": round(filled, 2),
        "report_seconds": round(seconds, 2),
    }


def run(db: str, smoke: bool) -> dict[str, Any]:
    """Both measurements, in the scratch database the caller set up."""
    from django.db import connection

    from benchmarks.benchapp.models import GapInteger, GapText

    rows = ROWS["smoke" if smoke else "full"]
    highest = highest_for(rows)
    return {
        "db": db,
        "vendor_version": version(connection),
        "integer": measure(connection, "benchapp.GapInteger.number", GapInteger, "number", highest, text=False),
        "formatted": measure(connection, "benchapp.GapText.code", GapText, "code", highest, text=True),
    }


def report(results: dict[str, Any], json_path: str | None = None) -> Path:
    print(f"\ngap report on {results['db']} ({results['vendor_version']})")
    for kind in ("integer", "formatted"):
        figures = results[kind]
        print(
            f"  {kind:<9}  {figures['rows']:>9,} rows, {figures['gaps']:>6,} gaps ({figures['voided']} voided): "
            f"report {figures['report_seconds']:>6.2f} s   (table filled in {figures['fill_seconds']:.2f} s)"
        )
    path = Path(json_path) if json_path else ROOT / "benchmarks" / f"results-gaps-{results['db']}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"figures written to {path}")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, choices=["sqlite", "mariadb", "postgres"])
    parser.add_argument("--smoke", action="store_true", help=f"{ROWS['smoke']:,} rows instead of {ROWS['full']:,}")
    parser.add_argument("--json", help="where to write the figures (default benchmarks/results-gaps-DB.json)")
    args = parser.parse_args(argv)
    with scratch_database(args.db):
        results = run(args.db, args.smoke)
    report(results, args.json)


if __name__ == "__main__":
    main()
