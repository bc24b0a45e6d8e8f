"""Run the test suite once per database backend: SQLite, MariaDB and PostgreSQL.

Under CI=true a backend that cannot be reached fails the run; elsewhere it is skipped, and said so.
Arguments are passed to pytest. SEGMENT_SEQ_BACKENDS=sqlite,postgres picks backends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ["sqlite", "mariadb", "postgres"]

# How to start a stopped local server, as root, on the Debian machines this project runs on.
START_COMMANDS = {
    "mariadb": "start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd",
    "postgres": "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start",
}


def reachable(backend: str) -> str | None:
    """None when the backend answers, else why not."""
    try:
        if backend == "mariadb":
            import MySQLdb

            MySQLdb.connect(host="127.0.0.1", port=3306, user="root", password="", connect_timeout=3).close()
        elif backend == "postgres":
            import psycopg

            psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", connect_timeout=3).close()
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable", reported verbatim
        return f"{type(exc).__name__}: {exc}".strip()
    return None


def ensure_running(backend: str) -> str | None:
    problem = reachable(backend)
    if problem is None or backend not in START_COMMANDS or os.geteuid() != 0:
        return problem
    binary = START_COMMANDS[backend].split()[0]
    if shutil.which(binary) is None:
        return problem
    print(f"==> {backend} is not answering ({problem}); starting it", flush=True)
    subprocess.run(START_COMMANDS[backend], shell=True, check=False)
    for _ in range(30):
        time.sleep(1)
        problem = reachable(backend)
        if problem is None:
            return None
    return problem


def main(pytest_args: list[str]) -> int:
    in_ci = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
    chosen = [b for b in os.environ.get("SEGMENT_SEQ_BACKENDS", ",".join(BACKENDS)).split(",") if b]
    results: dict[str, str] = {}
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    failed = False
    for backend in chosen:
        problem = ensure_running(backend)
        if problem is not None:
            if in_ci:
                results[backend] = f"FAILED: not reachable ({problem})"
                totals["failed"] += 1  # the whole backend, counted once
                failed = True
            else:
                results[backend] = f"SKIPPED: not reachable ({problem})"
            print(f"==> {backend}: {results[backend]}", flush=True)
            continue
        print(f"==> tests on {backend}", flush=True)
        env = dict(os.environ, SEGMENT_SEQ_TEST_DB=backend)
        report = Path(tempfile.mkdtemp()) / f"{backend}.xml"
        code = subprocess.call(
            [sys.executable, "-m", "pytest", f"--junitxml={report}", *pytest_args], cwd=ROOT, env=env
        )
        results[backend] = "passed" if code == 0 else f"FAILED (pytest exit {code})"
        failed |= code != 0
        add_counts(totals, report)
    print("\n==> backends:")
    for backend in chosen:
        print(f"    {backend:9} {results[backend]}")
    print(f"total: {totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
    return 1 if failed else 0


def add_counts(totals: dict[str, int], report: Path) -> None:
    """Add one pytest run's counts from its JUnit XML report (absent if pytest never started)."""
    if not report.exists():
        return
    for suite in ElementTree.parse(report).getroot().iter("testsuite"):
        tests, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        totals["passed"] += tests - skipped - failed
        totals["failed"] += failed
        totals["skipped"] += skipped


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
