"""Run the test suite over the version matrix, and once per database backend: SQLite, MariaDB and PostgreSQL.

Without SEGMENT_SEQ_CELL this is the whole run `./dev test` makes: the linters, the docs build and the
package check, and every cell of the matrix in noxfile.py (a Django release on a Python, each in a nox
virtualenv) on every backend, as jobs two at a time, of which one at most is a whole-suite backend; then
one closing line with the counts of all cells and backends. Each job has a time budget, past which it is
ended and fails. SEGMENT_SEQ_CELLS=ID[,ID] runs only those cells and no other step; `venv` (alone) is the
development virtualenv itself, with no nox at all.

Inside a cell (nox sets SEGMENT_SEQ_CELL) it runs pytest once per backend, printing the ten slowest tests.
Under CI=true a backend that cannot be reached fails the run; elsewhere it is skipped, and said so.
Arguments are passed to pytest. SEGMENT_SEQ_BACKENDS=sqlite,postgres picks backends; SEGMENT_SEQ_JOBS=N
runs N jobs at a time. The run-once tests (RUN_ONCE in tests/conftest.py) run in one job only.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
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
            try:
                import psycopg as driver
            except ImportError:  # a psycopg2 cell
                import psycopg2 as driver

            driver.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", connect_timeout=3).close()
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
    """How many jobs (a backend's pytest run, a step) go at once: SEGMENT_SEQ_JOBS, else two, of which
    run_jobs() lets one at most be a whole-suite backend.

    Measured on the 2-core machine when the suite was smaller: the whole suite on SQLite and MariaDB
    took 215 s and 195 s alone and 291 s and 310 s side by side, while three whole-suite backends side
    by side took 826-1070 s each, far longer than one after the other (the suite's worker processes
    then outnumber the cores several times over, and the database servers do not yield).
    """
    return max(1, int(os.environ.get("SEGMENT_SEQ_JOBS", "0") or 0) or 2)


def run_cell(pytest_args: list[str], coverage: bool = False) -> int:
    """pytest once per backend in this interpreter; counts go to SEGMENT_SEQ_COUNTS (a JSON file) when set.

    The run-once tests run on SEGMENT_SEQ_ONCE_BACKEND ("none": on none of this cell's), else on its first
    backend that answers; what each backend ran of them goes to SEGMENT_SEQ_ONCE_DIR, for the whole run to
    check, or is checked here when this cell is the whole run.
    """
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
    once_backend = os.environ.get("SEGMENT_SEQ_ONCE_BACKEND") or (runnable[0] if runnable else "none")
    once_dir = Path(os.environ.get("SEGMENT_SEQ_ONCE_DIR") or tempfile.mkdtemp())
    cell = os.environ.get("SEGMENT_SEQ_CELL", "cell")
    once = {b: RunOnce(b == once_backend, once_dir / f"{cell}-{b}.json") for b in runnable}
    jobs = min(backend_jobs(), len(runnable)) or 1
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = {b: pool.submit(run_pytest, b, pytest_args, coverage, jobs > 1, once[b]) for b in runnable}
        for backend in runnable:
            code, report = runs[backend].result()
            results[backend] = "passed" if code == 0 else f"FAILED (pytest exit {code})"
            failed |= code != 0
            counts[backend] = {"passed": 0, "failed": 0, "skipped": 0}
            add_counts(counts[backend], report)
            if code != 0 and counts[backend]["failed"] == 0:
                counts[backend]["failed"] = 1  # pytest failed without a failing test: a collection or usage error
    if not os.environ.get("SEGMENT_SEQ_ONCE_DIR"):
        problem = once_problem(read_once_reports(once_dir))
        if problem:
            results["(run-once tests)"] = f"FAILED: {problem}"
            counts["(run-once tests)"] = {"passed": 0, "failed": 1, "skipped": 0}
            chosen = [*chosen, "(run-once tests)"]
            failed = True
    print("\n==> backends:")
    for backend in chosen:
        print(f"    {backend:9} {results[backend]}")
    if os.environ.get("SEGMENT_SEQ_COUNTS"):
        Path(os.environ["SEGMENT_SEQ_COUNTS"]).write_text(json.dumps(counts))
    else:
        print(closing_line(sum_counts(counts.values())))
    return 1 if failed else 0


@dataclass(frozen=True)
class RunOnce:
    """Whether one backend's pytest runs the run-once tests, and where it says which it ran or left out."""

    runs: bool
    report: Path


def run_pytest(
    backend: str, pytest_args: list[str], coverage: bool, side_by_side: bool, once: RunOnce
) -> tuple[int, Path]:
    """One backend's pytest run, with its ten slowest tests printed: its exit code and its JUnit report.

    Side by side with other backends, its output goes to a file, printed whole when it ends, so the
    log reads one backend at a time.
    """
    env = dict(
        os.environ,
        SEGMENT_SEQ_TEST_DB=backend,
        SEGMENT_SEQ_RUN_ONCE="1" if once.runs else "0",
        SEGMENT_SEQ_ONCE_REPORT=str(once.report),
    )
    scratch = Path(tempfile.mkdtemp())
    report = scratch / f"{backend}.xml"
    runner = ["coverage", "run", "-m", "pytest"] if coverage else ["pytest"]
    command = [sys.executable, "-m", *runner, f"--junitxml={report}", "--durations=10", *pytest_args]
    if not side_by_side:
        print(f"==> tests on {backend}", flush=True)
        return subprocess.call(command, cwd=ROOT, env=env), report
    print(f"==> tests on {backend} started", flush=True)
    code = call_logged(command, env, scratch / f"{backend}.log", f"tests on {backend}")
    return 1 if code is None else code, report  # None only past a budget, which a backend's run has not


def read_once_reports(folder: Path) -> dict[str, dict[str, list[str]]]:
    """What each pytest run (a cell on a backend) ran and left out of the run-once tests, by its file's name."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}


def once_problem(reports: dict[str, dict[str, list[str]]]) -> str | None:
    """Why the run-once tests did not each run in exactly one pytest run, or None when they did."""
    ran = collections.Counter(test for report in reports.values() for test in report["ran"])
    left_out = {test for report in reports.values() for test in report["left_out"]}
    twice = sorted(test for test, times in ran.items() if times > 1)
    never = sorted(left_out - set(ran))
    if never:
        return f"{len(never)} ran in no job, e.g. {never[0]}"
    if twice:
        return f"{len(twice)} ran in more than one job, e.g. {twice[0]}"
    return None


# Every job's process group while it runs, to end them all if the run itself is interrupted.
RUNNING: set[int] = set()


def call_logged(command: list[str], env: dict[str, str], log: Path, title: str, budget: float = 0) -> int | None:
    """Run a command with its output in a file, then print that file whole under one heading.

    With a budget in seconds, the command runs in a process group of its own; past the budget it and every
    process it started are ended, and None is returned: a job that hangs fails, naming itself, instead of
    the run running into CI's limit.
    """
    started = time.monotonic()
    with log.open("w") as output:
        group = 0 if budget else None
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, process_group=group
        )
        if budget:
            RUNNING.add(proc.pid)
        try:
            code: int | None = proc.wait(timeout=budget or None)
        except subprocess.TimeoutExpired:
            end_group(proc)
            code = None
        finally:
            RUNNING.discard(proc.pid)
    with PRINTING:
        print(f"==> {title} ({time.monotonic() - started:.0f} s)", flush=True)
        sys.stdout.write(log.read_text())
        if code is None:
            print(f"==> {title}: FAILED, over its budget of {budget:.0f} s (ended)", flush=True)
        sys.stdout.flush()
    return code


def end_group(proc: subprocess.Popen[bytes]) -> None:
    """Interrupt a job's processes as Ctrl-C would (pytest then names the test it was in and tears down), and
    kill whatever is left after 30 s."""
    with_group(proc.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while group_alive(proc.pid) and time.monotonic() < deadline:  # pytest may outlive nox, tearing down
        time.sleep(0.5)
    with_group(proc.pid, signal.SIGKILL)
    proc.wait()


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def end_running() -> None:
    """Kill every job still running in a process group of its own."""
    for group in list(RUNNING):
        with_group(group, signal.SIGKILL)


def with_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # every process of the group has ended
        os.killpg(group, signum)


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
    return subprocess.call(nox_command(*args), cwd=ROOT, env=env)


def nox_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), *args]


@dataclass
class Job:
    """One piece of a whole run: a step (lint, docs, package) or one cell on one backend."""

    title: str
    row: str  # its name in the summary
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    counts: Path | None = None  # where a test job's run_cell writes its counts
    heavy: bool = False  # the whole suite on a backend: at most heavy_at_once() of them side by side
    budget: float = 0  # seconds it may take (0: no limit); past it, it is ended and fails
    code: int = 0
    over_budget: bool = False


def heavy_at_once() -> int:
    """How many whole-suite jobs may run at once: SEGMENT_SEQ_HEAVY_AT_ONCE, else two.

    One at a time was tried: on a clean clone each whole suite then took past 1,000 s alone (PostgreSQL 1,231 s
    at 71 %, MariaDB 1,089 s at 62 %), so the three one after the other came to about 80 minutes, against the 41 of
    the last run with two side by side. Two at a time stays the default until one at a time is measured faster.
    """
    return max(1, int(os.environ.get("SEGMENT_SEQ_HEAVY_AT_ONCE", "0") or 0) or 2)


def run_jobs(jobs: list[Job], workers: int) -> None:
    """Run the jobs, at most `workers` at a time and at most heavy_at_once() heavy ones, each in the order given
    (longest first keeps the places busy): a light job takes a place a heavy one may not.

    Two whole-suite backends side by side each took more than twice as long as alone: their worker
    processes outnumber the two cores several times over, and they share the database servers.
    Each job's output goes to a file, printed whole under one heading when the job ends.
    """
    scratch = Path(tempfile.mkdtemp())
    pending = list(enumerate(jobs))
    changed = threading.Condition()
    heavy_running = 0
    most_heavy = heavy_at_once()

    def take() -> tuple[int, Job] | None:
        nonlocal heavy_running
        with changed:
            while pending:
                for place, (number, job) in enumerate(pending):
                    if not (job.heavy and heavy_running >= most_heavy):
                        del pending[place]
                        heavy_running += job.heavy
                        return number, job
                changed.wait()  # only heavy jobs are left, and as many run as may
            return None

    def work() -> None:
        nonlocal heavy_running
        while (taken := take()) is not None:
            number, job = taken
            with PRINTING:
                print(f"==> {job.title} started", flush=True)
            env = dict(os.environ, **job.env)
            code = call_logged(job.command, env, scratch / f"{number}.log", job.title, job.budget)
            job.code, job.over_budget = (1, True) if code is None else (code, False)
            with changed:
                heavy_running -= job.heavy
                changed.notify_all()

    places = max(1, min(workers, len(jobs)))
    pool = ThreadPoolExecutor(max_workers=places)
    try:
        for done in [pool.submit(work) for _ in range(places)]:
            done.result()
    except BaseException:  # Ctrl-C or SIGTERM: no job starts any more, and the running ones are ended
        with changed:
            pending.clear()
        end_running()
        raise
    finally:
        pool.shutdown()


def run_matrix(pytest_args: list[str]) -> int:
    """The lint, docs and package steps and every cell on every backend, two at a time; then one closing line.

    A cell's backends are jobs of their own: the whole suite's backends run one after the other, and
    beside them the steps and the core cells use the rest of the machine. The summary has a row that
    fails when a run-once test ran in no job or in more than one.
    """
    sys.path.insert(0, str(ROOT))
    from noxfile import CELLS, Cell

    known = {cell.id: cell for cell in CELLS}
    picked = [name for name in os.environ.get("SEGMENT_SEQ_CELLS", "").split(",") if name]
    unknown = [name for name in picked if name not in known and name != "venv"]
    if unknown:
        print(f"SEGMENT_SEQ_CELLS: no cell {', '.join(unknown)}; there are venv, {', '.join(known)}", file=sys.stderr)
        return 2
    if "venv" in picked:
        if picked != ["venv"]:
            print("SEGMENT_SEQ_CELLS: venv runs alone", file=sys.stderr)
            return 2
        code, backends = run_venv_cell(pytest_args)
        if code != 0 and sum_counts(backends.values())["failed"] == 0:
            backends["(the run)"] = {"failed": 1}
        return summary([(f"venv {backend}", counts, counts_text(counts)) for backend, counts in backends.items()])
    cells = [known[name] for name in (picked or list(known)) if name in known]
    chosen = [b for b in os.environ.get("SEGMENT_SEQ_BACKENDS", ",".join(BACKENDS)).split(",") if b]
    rows: list[tuple[str, dict[str, int], str]] = []  # what ran, its counts, what to print
    # A cell's backends share its virtualenv: each is made (or brought up to date) before they start, all of them
    # at once (mostly downloads and disk: one after the other they took about 3 minutes of a clean run).
    installs = [Job(f"installing cell {cell.id}", cell.id, nox_command("-s", f"tests({cell.id})", "--install-only"),
                    budget=budget("install")) for cell in cells]  # fmt: skip
    run_jobs(installs, len(installs))
    installed = [cell for cell, install in zip(cells, installs, strict=True) if install.code == 0]
    rows += [(job.row, {"failed": 1}, failed_text(job, "its virtualenv could not be installed")) for job in installs
             if job.code]  # fmt: skip
    coverage_data = ROOT / ".coverage-data"
    whole = not pytest_args and "SEGMENT_SEQ_BACKENDS" not in os.environ  # coverage and its floor: whole runs only
    measured = [cell for cell in installed if cell.coverage and whole]
    if measured:
        shutil.rmtree(coverage_data, ignore_errors=True)
        coverage_data.mkdir()
    scratch = Path(tempfile.mkdtemp())
    once_dir = scratch / "once"
    once_dir.mkdir()
    pairs = [(cell, b) for cell in installed for b in sorted(chosen, key=lambda b: -SLOWEST_FIRST.get(b, 0))
             if runs_on(cell, b)]  # fmt: skip
    once_pair = pick_once_job(pairs)

    def test_job(cell: Cell, backend: str) -> Job:
        counts = scratch / f"{cell.id}-{backend}.json"
        return Job(
            title=f"cell {cell.id} ({cell.suite} suite) on {backend}",
            row=f"{cell.id} {backend}",
            command=nox_command("-s", f"tests({cell.id})", "--no-install", "--", *pytest_args),
            env={
                "SEGMENT_SEQ_BACKENDS": backend,
                "SEGMENT_SEQ_COUNTS": str(counts),
                "SEGMENT_SEQ_ONCE_BACKEND": backend if (cell, backend) == once_pair else "none",
                "SEGMENT_SEQ_ONCE_DIR": str(once_dir),
                **({"SEGMENT_SEQ_COVERAGE_DATA": str(coverage_data)} if cell in measured else {}),
            },
            counts=counts,
            heavy=cell.suite == "full",
            budget=budget(f"{cell.suite} {backend}", coverage=cell in measured),
        )

    tests = [test_job(cell, backend) for cell, backend in pairs]
    steps = [] if picked else [Job(step, step, nox_command("-s", step), budget=budget(step)) for step in STEPS]
    # The heavy jobs one after the other, the slowest first; beside them the light ones, the longest first.
    jobs = [job for job in tests if job.heavy] + sorted(
        [job for job in tests if not job.heavy] + steps, key=lambda job: -job.budget
    )
    run_jobs(jobs, backend_jobs())
    for job in jobs:
        if job.over_budget:
            rows.append((job.row, {"failed": 1}, failed_text(job, "")))
            continue
        if job.counts is None:
            rows.append((job.row, {"failed": int(job.code != 0)}, "passed" if job.code == 0 else "FAILED"))
            continue
        found = json.loads(job.counts.read_text()) if job.counts.exists() else {}
        for counts in found.values():
            rows.append((job.row, counts, counts_text(counts)))
        if not found:
            # Nothing ran: nox skips a cell whose Python is missing (fails it under CI), or its set-up failed.
            rows.append((job.row, {"failed": int(job.code != 0)}, "FAILED before any test" if job.code else "SKIPPED"))
        elif job.code != 0 and sum_counts(found.values())["failed"] == 0:
            rows.append((job.row, {"failed": 1}, "FAILED after the tests (see above)"))
    if pairs:
        problem = once_problem(read_once_reports(once_dir))
        once_row = f"passed (in {once_pair[0].id} {once_pair[1]})" if once_pair else "passed"
        rows.append(("run-once tests", {"failed": int(bool(problem))}, f"FAILED: {problem}" if problem else once_row))
    for cell in measured:
        print(f"==> coverage of cell {cell.id}", flush=True)
        code = nox("-s", f"tests({cell.id})", "--no-install", env=dict(os.environ, SEGMENT_SEQ_COVERAGE_REPORT="1"))
        rows.append((f"{cell.id} coverage", {"failed": int(code != 0)}, "passed" if code == 0 else "FAILED"))
    return summary(rows)


STEPS = ["lint", "package", "docs"]


def pick_once_job(pairs: list[tuple[Any, str]]) -> tuple[Any, str] | None:
    """The one cell and backend that runs the run-once tests: the whole suite on SQLite, else the first whole-suite
    job, else the first job (a run-once test outside tests/processes then still runs somewhere)."""
    full = [(cell, backend) for cell, backend in pairs if cell.suite == "full"]
    return next((pair for pair in full if pair[1] == "sqlite"), None) or next(iter(full or pairs), None)


# What each job takes on the idle 2-core machine, in seconds (docs/development.md, "How long a run takes"): a test
# job by its cell's suite and its backend. Its budget is twice that, so a loaded machine still passes while a job
# that hangs ends long before CI's 90 minutes; SEGMENT_SEQ_BUDGET_SCALE multiplies every budget (0: none). Where a
# figure comes from is said there. A clean clone's first run took the whole suite on PostgreSQL past 1,230 s, with a
# core cell beside it: the whole-suite figures are that run's, rounded up.
EXPECTED = {
    "install": 300,
    "lint": 450,
    "package": 400,
    "docs": 150,
    "full postgres": 2000,
    "full mariadb": 2000,
    "full sqlite": 1500,
    "core sqlite": 300,
    "core mariadb": 400,
    "core postgres": 450,
    "redis sqlite": 120,
    "postgres postgres": 240,
}
COVERAGE_COST = 1.5  # a core suite under coverage, its worker processes measured too


def budget(job: str, coverage: bool = False) -> float:
    """A job's budget in seconds: twice what it takes, times SEGMENT_SEQ_BUDGET_SCALE; 0 for none."""
    scale = float(os.environ.get("SEGMENT_SEQ_BUDGET_SCALE", "1") or 1)
    return 2 * EXPECTED.get(job, 600) * (COVERAGE_COST if coverage else 1) * scale


def failed_text(job: Job, why: str) -> str:
    """A failed job's summary row: past its budget it says so, with the budget."""
    if job.over_budget:
        return f"FAILED: over its budget of {job.budget:.0f} s"
    return f"FAILED: {why}" if why else "FAILED"


def runs_on(cell: Any, backend: str) -> bool:
    """Whether the matrix runs `cell` on `backend`: a cell naming its backends runs on those only."""
    return not cell.backends or backend in cell.backends


# The order a cell's backends start in: the slowest first (PostgreSQL's whole suite is the run's longest job).
SLOWEST_FIRST = {"postgres": 3, "mariadb": 2, "sqlite": 1}


def run_venv_cell(pytest_args: list[str]) -> tuple[int, dict[str, dict[str, int]]]:
    """The development virtualenv as a cell of its own: no nox, the backends side by side."""
    scratch = Path(tempfile.mkdtemp())
    report = scratch / "counts.json"
    env = dict(os.environ, SEGMENT_SEQ_COUNTS=str(report), SEGMENT_SEQ_CELL="venv")
    print("==> cell venv", flush=True)
    code = subprocess.call([sys.executable, __file__, *pytest_args], cwd=ROOT, env=env)
    return code, json.loads(report.read_text()) if report.exists() else {}


def summary(rows: list[tuple[str, dict[str, int], str]]) -> int:
    print("\n==> summary:")
    for what, _, text in rows:
        print(f"    {what:40} {text}")
    total = sum_counts(counts for _, counts, _ in rows)
    print(closing_line(total))
    return 1 if total["failed"] else 0


def main(argv: list[str]) -> int:
    # A job runs in a process group of its own (so its budget can end all of it), which a Ctrl-C or CI's
    # SIGTERM does not reach: the run ends its jobs itself.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        if os.environ.get("SEGMENT_SEQ_CELL"):
            coverage = "--coverage" in argv[:1]
            return run_cell(argv[1:] if coverage else argv, coverage=coverage)
        return run_matrix(argv)
    finally:
        end_running()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
