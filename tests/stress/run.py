"""The stress harness: N worker processes hammer one sequence on one backend; the parent checks for repeats.

    ./dev stress                          # small run on SQLite, MariaDB and PostgreSQL
    ./dev stress --soak --backend mariadb # the soak size, one backend
    ./dev stress --faults kill,sessions   # also SIGKILL workers (and restart them), and kill their sessions

Each worker takes numbers through next_value, next_values (random counts) and saves of a model with
a SequenceField, writing every number to its own file. The sequence's step is random and is changed
at random while the workers run. The parent then reports totals, allocations, compare-and-set
retries and wasted numbers (gaps), and exits 1 if any number was handed out twice.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ("sqlite", "mariadb", "postgres")
SMALL = {"workers": 4, "numbers": 2000}
SOAK = {"workers": 8, "numbers": 250_000}


@dataclass
class Report:
    """What one run handed out and what it cost."""

    backend: str
    workers: int
    numbers: int = 0
    duplicates: list[int] = field(default_factory=list)
    stored_duplicates: list[int] = field(default_factory=list)
    allocations: int = 0
    retries: int = 0
    failures: int = 0
    worker_errors: int = 0
    wasted: int = 0
    seconds: float = 0.0
    faults: str = ""
    processes_killed: int = 0
    sessions_killed: int = 0

    def lines(self) -> list[str]:
        return [
            f"backend      {self.backend}",
            f"processes    {self.workers}"
            + (f" (+{self.processes_killed} restarted after SIGKILL)" if self.processes_killed else ""),
            f"faults       {self.faults or 'step edits only'}"
            + (f", {self.sessions_killed} sessions killed" if self.sessions_killed else ""),
            f"numbers      {self.numbers}",
            f"duplicates   {len(self.duplicates)} handed out, {len(self.stored_duplicates)} stored",
            f"allocations  {self.allocations}",
            f"retries      {self.retries} lost compare-and-sets, {self.failures} database failures"
            + (f", {self.worker_errors} errors retried by the workers" if self.worker_errors else ""),
            f"wasted       {self.wasted} numbers (gaps)",
            f"wall time    {self.seconds:.1f} s",
        ]


def worker_env(backend: str, db_name: str, **extra: str) -> dict[str, str]:
    """The environment of a worker process that connects to an existing (test) database.

    Workers run with the app's default allocation settings, prefetch and adaptive step on, as
    deployments do; SEGMENT_SEQ_TEST_PREFETCH="" in `extra` or the environment turns them off.
    """
    env = dict(os.environ)
    env.setdefault("SEGMENT_SEQ_TEST_PREFETCH", "1")
    env.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        SEGMENT_SEQ_TEST_DB=backend,
        SEGMENT_SEQ_TEST_DB_NAME=db_name,
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    env.update(extra)
    return env


def start_worker(out: Path, count: int, env: dict[str, str], *options: str) -> subprocess.Popen[str]:
    """One worker process collecting `count` numbers into `out` (see tests/stress/worker.py)."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.stress.worker", str(out), "--count", str(count), *options],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_all(procs: list[subprocess.Popen[str]], timeout: float = 600) -> None:
    """Wait for every worker; fail with the stderr of one that failed."""
    deadline = time.monotonic() + timeout
    for proc in procs:
        _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        if proc.returncode != 0:
            raise AssertionError(f"worker exited with {proc.returncode}:\n{err}")


def read_figures(outs: list[Path]) -> dict[str, int]:
    """The sums of the workers' figures (ranges fetched, retries, failures) from their .json files."""
    totals: collections.Counter[str] = collections.Counter()
    for out in outs:
        path = Path(str(out) + ".json")
        if path.exists():
            figures = json.loads(path.read_text())
            totals.update({k: v for k, v in figures.items() if isinstance(v, int)})
            totals["worker_errors"] += sum(figures.get("errors", {}).values())
    return dict(totals)


def repeated(numbers: list[int]) -> list[int]:
    return sorted(n for n, times in collections.Counter(numbers).items() if times > 1)


class Crew:
    """The worker processes of one run, with the ones killed on purpose and what each was asked for."""

    def __init__(self, env: dict[str, str], workdir: Path, seed: int) -> None:
        self.env, self.workdir, self.seed = env, workdir, seed
        self.procs: list[subprocess.Popen[str]] = []
        self.outs: list[Path] = []
        self.counts: list[int] = []
        self.killed: list[subprocess.Popen[str]] = []

    def start(self, count: int) -> None:
        out = self.workdir / f"stress{len(self.outs)}.txt"
        self.procs.append(start_worker(out, count, self.env, "--seed", str(self.seed * 1000 + len(self.outs))))
        self.outs.append(out)
        self.counts.append(count)

    def running(self) -> list[int]:
        return [i for i, proc in enumerate(self.procs) if proc.poll() is None]

    def kill_and_restart(self, rng: random.Random) -> None:
        """SIGKILL one running worker, then start a new one for the numbers it still owed."""
        from tests.stress.worker import read_numbers

        running = self.running()
        if not running:
            return
        i = rng.choice(running)
        self.procs[i].kill()
        self.procs[i].wait()
        self.killed.append(self.procs[i])
        self.start(max(1, self.counts[i] - len(read_numbers(str(self.outs[i])))))

    def wait(self) -> None:
        wait_all([proc for proc in self.procs if proc not in self.killed])


def kill_sessions(connection: Any) -> int:
    """End every session on this connection's database but its own (MariaDB KILL, pg_terminate_backend)."""
    from django.db import DatabaseError

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return int(cursor.fetchone()[0])
        cursor.execute("SELECT id FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID()")
        killed = 0
        for (session,) in cursor.fetchall():
            try:
                cursor.execute(f"KILL {int(session)}")
                killed += 1
            except DatabaseError:
                pass  # it ended on its own meanwhile
        return killed


def stress(
    backend: str, db_name: str, workers: int, numbers: int, workdir: Path, seed: int = 0, faults: str = ""
) -> Report:
    """Run the workers against an existing database with the Sequence table; the caller checks the report.

    `faults` may name "kill" (SIGKILL a random worker now and then, and start a replacement) and
    "sessions" (end every worker's database session now and then; not on SQLite).
    """
    from django.db import connection

    from django_segment_seq.models import Sequence
    from tests.stress.worker import read_numbers
    from tests.testapp.models import Order

    rng = random.Random(seed)
    chosen = {f for f in faults.split(",") if f}
    if backend == "sqlite":
        chosen.discard("sessions")
    Sequence.objects.update_or_create(name="order", defaults={"step": rng.randint(1, 500)})
    crew = Crew(worker_env(backend, db_name), workdir, seed)
    started = time.monotonic()
    for _ in range(workers):
        crew.start(numbers)
    sessions_killed = 0
    while crew.running():
        _edit_step(rng)
        if "kill" in chosen and rng.random() < 0.2:
            crew.kill_and_restart(rng)
        if "sessions" in chosen and rng.random() < 0.3:
            sessions_killed += kill_sessions(connection)
        time.sleep(rng.uniform(0.05, 0.5))
    crew.wait()
    seconds = time.monotonic() - started
    outs = crew.outs
    got = [n for out in outs for n in read_numbers(str(out))]
    figures = read_figures(outs)
    row = Sequence.objects.get(name="order")
    return Report(
        backend=backend,
        workers=workers,
        numbers=len(got),
        duplicates=repeated(got),
        stored_duplicates=repeated(list(Order.objects.values_list("order_no", flat=True))),
        allocations=figures.get("ranges_fetched", 0),
        retries=figures.get("retries", 0),
        failures=figures.get("failures", 0),
        worker_errors=figures.get("worker_errors", 0),
        wasted=(row.value - row.min_value + 1) - len(set(got)),
        seconds=seconds,
        faults=",".join(sorted(chosen)),
        processes_killed=len(crew.killed),
        sessions_killed=sessions_killed,
    )


def _edit_step(rng: random.Random) -> None:
    """An admin changing the step while processes allocate."""
    from django_segment_seq.models import Sequence

    row = Sequence.objects.get(name="order")
    row.step = rng.randint(1, 500)
    row.full_clean()
    row.save()


def run_backend(backend: str, workers: int, numbers: int, seed: int, faults: str = "") -> Report:
    """Create a throw-away database on `backend`, stress it, drop it."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["SEGMENT_SEQ_TEST_DB"] = backend
    sys.path.insert(0, str(ROOT))
    import django
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    from django_segment_seq.allocator.connections import pool

    django.setup()
    config = setup_databases(verbosity=0, interactive=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            name = str(connection.settings_dict["NAME"])
            return stress(backend, name, workers, numbers, Path(tmp), seed, faults)
    finally:
        pool.close_all()
        teardown_databases(config, verbosity=0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=BACKENDS, action="append", help="repeatable; default: all three")
    parser.add_argument("--soak", action="store_true", help=f"{SOAK['workers']} processes x {SOAK['numbers']}")
    parser.add_argument("--workers", type=int, help=f"default {SMALL['workers']}")
    parser.add_argument("--numbers", type=int, help=f"per process, default {SMALL['numbers']}")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--faults", default="", help="comma-separated: kill (SIGKILL and restart workers), sessions")
    args = parser.parse_args(argv)
    size = SOAK if args.soak else SMALL
    workers, numbers = args.workers or size["workers"], args.numbers or size["numbers"]
    failed = False
    for backend in args.backend or BACKENDS:
        # One child per backend: Django's settings are per process.
        code = subprocess.call(
            [
                sys.executable,
                "-c",
                "import sys; from tests.stress.run import one; sys.exit(one(*sys.argv[1:]))",
                backend,
                str(workers),
                str(numbers),
                str(args.seed),
                args.faults,
            ],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        failed |= code != 0
    return 1 if failed else 0


def one(backend: str, workers: str, numbers: str, seed: str, faults: str = "") -> int:
    """Run and report one backend; 1 if any number was repeated."""
    print(f"==> stress on {backend}: {workers} processes x {numbers} numbers, seed {seed}", flush=True)
    report = run_backend(backend, int(workers), int(numbers), int(seed), faults)
    print("\n".join("    " + line for line in report.lines()), flush=True)
    return 1 if report.duplicates or report.stored_duplicates else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
