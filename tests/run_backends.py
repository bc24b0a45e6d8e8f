"""Run the test suite over the version matrix, and once per database backend: SQLite, MariaDB and PostgreSQL.

Without SEGMENT_SEQ_CELL this is the whole run `./dev test` makes: the linters, the docs build and the package check,
then every cell of the matrix in noxfile.py (a Django release on a Python, each in a nox virtualenv),
then one closing line with the counts of all cells and backends. SEGMENT_SEQ_CELLS=ID[,ID] runs only
those cells and no other step; `venv` is the development virtualenv itself, with no nox at all.

Inside a cell (nox sets SEGMENT_SEQ_CELL) it runs pytest once per backend. Under CI=true a backend that
cannot be reached fails the run; elsewhere it is skipped, and said so. Arguments are passed to pytest.
SEGMENT_SEQ_BACKENDS=sqlite,postgres picks backends.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ["sqlite", "mariadb", "postgres"]
PRINTING = threading.Lock()  # one backend's log at a time

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


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def backend_jobs() -> int:
    """How many backends' pytest runs go at once: SEGMENT_SEQ_JOBS, else all of them.

    The suite mostly waits (on worker processes, database servers, lock timeouts), so the three
    backends side by side take little longer than the slowest alone, even on two cores.
    """
    return max(1, int(os.environ.get("SEGMENT_SEQ_JOBS", "0") or 0) or len(BACKENDS))


def run_cell(pytest_args: list[str], coverage: bool = False) -> int:
    """pytest once per backend in this interpreter; counts go to SEGMENT_SEQ_COUNTS (a JSON file) when set."""
    chosen = [b for b in os.environ.get("SEGMENT_SEQ_BACKENDS", ",".join(BACKENDS)).split(",") if b]
    results: dict[str, str] = {}
    counts: dict[str, dict[str, int]] = {}
    failed = False
    runnable: list[str] = []
    for backend in chosen:
        problem = ensure_running(backend)
        if problem is None:
            runnable.append(backend)
            continue
        if in_ci():
            results[backend] = f"FAILED: not reachable ({problem})"
            counts[backend] = {"passed": 0, "failed": 1, "skipped": 0}  # the whole backend, counted once
            failed = True
        else:
            results[backend] = f"SKIPPED: not reachable ({problem})"
        print(f"==> {backend}: {results[backend]}", flush=True)
    jobs = min(backend_jobs(), len(runnable)) or 1
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = {backend: pool.submit(run_pytest, backend, pytest_args, coverage, jobs > 1) for backend in runnable}
        for backend in runnable:
            code, report = runs[backend].result()
            results[backend] = "passed" if code == 0 else f"FAILED (pytest exit {code})"
            failed |= code != 0
            counts[backend] = {"passed": 0, "failed": 0, "skipped": 0}
            add_counts(counts[backend], report)
            if code != 0 and counts[backend]["failed"] == 0:
                counts[backend]["failed"] = 1  # pytest failed without a failing test: a collection or usage error
    print("\n==> backends:")
    for backend in chosen:
        print(f"    {backend:9} {results[backend]}")
    if os.environ.get("SEGMENT_SEQ_COUNTS"):
        Path(os.environ["SEGMENT_SEQ_COUNTS"]).write_text(json.dumps(counts))
    else:
        print(closing_line(sum_counts(counts.values())))
    return 1 if failed else 0


def run_pytest(backend: str, pytest_args: list[str], coverage: bool, side_by_side: bool) -> tuple[int, Path]:
    """One backend's pytest run: its exit code and its JUnit report.

    Side by side with other backends, its output goes to a file, printed whole when it ends, so the
    log reads one backend at a time.
    """
    env = dict(os.environ, SEGMENT_SEQ_TEST_DB=backend)
    scratch = Path(tempfile.mkdtemp())
    report = scratch / f"{backend}.xml"
    runner = ["coverage", "run", "-m", "pytest"] if coverage else ["pytest"]
    command = [sys.executable, "-m", *runner, f"--junitxml={report}", *pytest_args]
    if not side_by_side:
        print(f"==> tests on {backend}", flush=True)
        return subprocess.call(command, cwd=ROOT, env=env), report
    print(f"==> tests on {backend} started", flush=True)
    return call_logged(command, env, scratch / f"{backend}.log", f"tests on {backend}"), report


def call_logged(command: list[str], env: dict[str, str], log: Path, title: str) -> int:
    """Run a command with its output in a file, then print that file whole under one heading."""
    started = time.monotonic()
    with log.open("w") as output:
        code = subprocess.call(command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
    with PRINTING:
        print(f"==> {title} ({time.monotonic() - started:.0f} s)", flush=True)
        sys.stdout.write(log.read_text())
        sys.stdout.flush()
    return code


def sum_counts(parts: Iterable[dict[str, int]]) -> dict[str, int]:
    total = {"passed": 0, "failed": 0, "skipped": 0}
    for part in parts:
        for key in total:
            total[key] += part.get(key, 0)
    return total


def counts_text(counts: dict[str, int]) -> str:
    return f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"


def closing_line(total: dict[str, int]) -> str:
    return "total: " + counts_text(total)


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


def nox(*args: str, env: dict[str, str] | None = None) -> int:
    """Run nox from this interpreter (the development virtualenv); it finds the cells' interpreters on PATH."""
    return subprocess.call([sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), *args], cwd=ROOT, env=env)


def cell_jobs() -> int:
    """How many cells run at once: SEGMENT_SEQ_CELL_JOBS, else one.

    Side by side, the core cells (even at a low CPU priority) slow the whole suite more than they
    save: they share its database servers, which do not yield.
    """
    return max(1, int(os.environ.get("SEGMENT_SEQ_CELL_JOBS", "1") or 1))


def run_one_cell(
    name: str, pytest_args: list[str], side_by_side: bool, yielding: bool = False
) -> tuple[int, dict[str, dict[str, int]]]:
    """A cell's exit code and its counts per backend (none if no backend ran).

    Side by side with other cells, its output goes to a file, printed whole when it ends. A yielding
    cell runs at a low CPU priority (nice), so it takes only what the others leave idle.
    """
    scratch = Path(tempfile.mkdtemp())
    report = scratch / "counts.json"
    env = dict(os.environ, SEGMENT_SEQ_COUNTS=str(report))
    if name == "venv":
        env["SEGMENT_SEQ_CELL"] = name
        command = [sys.executable, __file__, *pytest_args]
    else:
        command = [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "-s", f"tests({name})", "--"]
        command += pytest_args
    if yielding:
        command = ["nice", "-n", "15", *command]
    if side_by_side:
        code = call_logged(command, env, scratch / "cell.log", f"cell {name}")
    else:
        print(f"==> cell {name}", flush=True)
        code = subprocess.call(command, cwd=ROOT, env=env)
    return code, json.loads(report.read_text()) if report.exists() else {}


def run_matrix(pytest_args: list[str]) -> int:
    """The docs and package steps, then each cell in its nox session, then one closing line for them all."""
    sys.path.insert(0, str(ROOT))
    from noxfile import CELLS

    known = {cell.id: cell for cell in CELLS}
    picked = [name for name in os.environ.get("SEGMENT_SEQ_CELLS", "").split(",") if name]
    unknown = [name for name in picked if name not in known and name != "venv"]
    if unknown:
        print(f"SEGMENT_SEQ_CELLS: no cell {', '.join(unknown)}; there are venv, {', '.join(known)}", file=sys.stderr)
        return 2
    rows: list[tuple[str, dict[str, int], str]] = []  # what ran, its counts, what to print
    for step in [] if picked else ["lint", "docs", "package"]:
        print(f"==> {step}", flush=True)
        code = nox("-s", step)
        rows.append((step, {"failed": int(code != 0)}, "passed" if code == 0 else "FAILED"))  # a step counts once
    names = picked or list(known)
    jobs = min(cell_jobs(), len(names))
    for name in names if jobs > 1 else []:
        print(f"==> cell {name}" + (f" ({known[name].suite} suite)" if name in known else "") + " started", flush=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        # The whole suite is the longest; core cells beside it use the CPU time it leaves idle.
        full = any(known[name].suite == "full" for name in names if name in known)
        runs = {
            name: pool.submit(
                run_one_cell,
                name,
                pytest_args,
                jobs > 1,
                jobs > 1 and full and name in known and known[name].suite == "core",
            )
            for name in names
        }
    for name in names:
        code, backends = runs[name].result()
        for backend, counts in backends.items():
            rows.append((f"{name} {backend}", counts, counts_text(counts)))
        if not backends:
            # Nothing ran: nox skips a cell whose Python is missing (fails it under CI), or its set-up failed.
            rows.append((name, {"failed": int(code != 0)}, "FAILED before any test" if code else "SKIPPED: no Python"))
        elif code != 0 and sum_counts(backends.values())["failed"] == 0:
            rows.append((name, {"failed": 1}, "FAILED after the tests (see above)"))  # e.g. coverage below its floor
    print("\n==> summary:")
    for what, _, text in rows:
        print(f"    {what:32} {text}")
    total = sum_counts(counts for _, counts, _ in rows)
    print(closing_line(total))
    return 1 if total["failed"] else 0


def main(argv: list[str]) -> int:
    if os.environ.get("SEGMENT_SEQ_CELL"):
        coverage = "--coverage" in argv[:1]
        return run_cell(argv[1:] if coverage else argv, coverage=coverage)
    return run_matrix(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
