"""Server sessions the allocator adds per process, and a 96-process start against max_connections, on one backend.

    ./dev bench --db sqlite|mariadb|postgres --only connections [--smoke] [--json PATH]
    python benchmarks/connections.py --db ... [--smoke] [--json PATH]

*Steady state*: worker processes hold their Django connection, take numbers with the default
settings for a few seconds, then idle past SEGMENT_SEQ["CONNECTION_MAX_IDLE"]; the server's sessions
on the benchmark database are counted meanwhile, less the workers' Django connections and the
parent's one. *Start*: 96 workers start together, each opens its Django connection and then takes
its first number and a few hundred more; errors, retries, time to the first number and repeats are
reported. Prints a table and writes benchmarks/results-connections-DB.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import scratch_database, setup_django, version  # noqa: E402 - after the path that makes it importable

SIZES = {
    # name: (full run, smoke run)
    "steady_processes": (8, 4),
    "steady_seconds": (4.0, 1.0),
    "start_processes": (96, 4),
    "start_numbers": (300, 50),
}
# SEGMENT_SEQ["CONNECTION_MAX_IDLE"] of the steady-state workers; versions without the setting ignore it.
MAX_IDLE = 1.0
# Sessions are counted this long after the last worker went idle: twice the idle limit, and a second to spare.
IDLE_WAIT = 2 * MAX_IDLE + 1.0
# A start worker that has no number this long after its Django connection gives up (a request would have
# timed out long before), and one that has its first stops trying after twice as long; the run then reports
# them instead of waiting for a slot that may never free.
FIRST_NUMBER_TIMEOUT = 30.0
# Pace of the steady-state workers: bursts of this many numbers, then a pause (about 20,000 a second).
BURST, PAUSE = 100, 0.005
# After an error a worker tries again this much later, as the next request of a web worker would.
RETRY_PAUSE = 0.1
# Upper bounds of each phase, so a stuck worker fails the run instead of hanging it.
START_TIMEOUT = 600.0
PHASE_TIMEOUT = 300.0
EXIT_TIMEOUT = 60.0
NOT_APPLICABLE = "not applicable: SQLite has no server sessions"


def size(name: str, smoke: bool) -> Any:
    return SIZES[name][1 if smoke else 0]


# --- worker processes ------------------------------------------------------------------------


def worker(args: argparse.Namespace) -> None:
    """One worker process: set up Django on the benchmark database, then run the steady or start script."""
    setup_django(args.db, args.dbname, json.loads(args.segment_seq))
    if args.worker == "steady":
        steady_worker(args.name, args.seconds, Path(args.out))
    else:
        start_worker(args.name, args.count, Path(args.out))


def say(word: str) -> None:
    print(word, flush=True)


def listen() -> None:
    """Wait for the parent's next line (go, exit); a closed pipe means the parent is gone."""
    if not sys.stdin.readline():
        raise SystemExit("parent went away")


def hold_django_connection() -> None:
    """Open this process's Django connection with a query, as a web worker's first request does, and keep it."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def error_kind(exc: BaseException) -> str:
    """A short, stable label of an error, so the same refusal from 96 processes counts as one kind."""
    text = " ".join(str(exc).split())
    for marker in ("too many clients", "too many connections"):
        if marker in text.lower():
            return f"{type(exc).__name__}: {marker}"
    return f"{type(exc).__name__}: {text[:100]}"


def figures_of(name: str) -> dict[str, Any]:
    """This process's sequence_stats() for `name` on the default database, as a dict (empty if none)."""
    from dataclasses import asdict

    from django_segment_seq import sequence_stats, wait_for_prefetch

    wait_for_prefetch(10)  # a background fetch still running records its outcome first
    found = sequence_stats().get(("default", name))
    return asdict(found) if found is not None else {}


def write_results(out: Path, numbers: list[int], figures: dict[str, Any]) -> None:
    out.write_text("\n".join(map(str, numbers)))
    Path(f"{out}.json").write_text(json.dumps(figures))


def steady_worker(name: str, seconds: float, out: Path) -> None:
    """Hold the Django connection, take numbers in bursts for `seconds`, then idle until told to exit."""
    from django_segment_seq import next_value

    hold_django_connection()
    say("ready")
    listen()
    numbers: list[int] = []
    errors: collections.Counter[str] = collections.Counter()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for _ in range(BURST):
            try:
                numbers.append(next_value(name))
            except Exception as exc:  # noqa: BLE001 - counted and reported, as a caller would see it
                errors[error_kind(exc)] += 1
                time.sleep(RETRY_PAUSE)
        time.sleep(PAUSE)
    write_results(out, numbers, {"errors": dict(errors), "stats": figures_of(name)})
    say("idle")
    listen()


def start_worker(name: str, count: int, out: Path) -> None:
    """On "go": open the Django connection, then take a first number and `count` more, retrying after errors."""
    from django.db import DatabaseError, connection

    from django_segment_seq import next_value

    say("ready")
    listen()
    went = time.monotonic()
    connect_errors: collections.Counter[str] = collections.Counter()
    connected: float | None = None
    while connected is None and time.monotonic() - went <= FIRST_NUMBER_TIMEOUT:
        try:
            hold_django_connection()
            connected = time.monotonic()
        except DatabaseError as exc:
            connect_errors[error_kind(exc)] += 1
            connection.close()
            time.sleep(RETRY_PAUSE)
    numbers: list[int] = []
    errors: collections.Counter[str] = collections.Counter()
    first: float | None = None
    while connected is not None and len(numbers) <= count:
        try:
            numbers.append(next_value(name))
        except Exception as exc:  # noqa: BLE001 - counted and reported, as a caller would see it
            errors[error_kind(exc)] += 1
            waited = time.monotonic() - connected
            if waited > (FIRST_NUMBER_TIMEOUT if first is None else 2 * FIRST_NUMBER_TIMEOUT):
                break
            time.sleep(RETRY_PAUSE)
            continue
        if first is None:
            first = time.monotonic()
    figures = {
        "connected": connected is not None,
        "connect_seconds": None if connected is None else connected - went,
        "first_number_seconds": None if first is None or connected is None else first - connected,
        "gave_up": first is None,
        "complete": len(numbers) == count + 1,
        "errors": dict(errors),
        "connect_errors": dict(connect_errors),
        "stats": figures_of(name),
    }
    write_results(out, numbers, figures)
    say("done")
    listen()


# --- the parent's side ---------------------------------------------------------------------------


class Crew:
    """Worker processes driven by lines: each says a word when it reaches a phase and waits for the next line.

    Used as a context manager: any process still running on the way out is killed, so a failed run
    leaves nothing behind.
    """

    def __init__(self, commands: list[list[str]], workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.selector = selectors.DefaultSelector()
        self.pending: list[bytes] = []
        self.heard: list[list[str]] = []
        try:
            for i, command in enumerate(commands):
                with open(workdir / f"worker{i}.err", "wb") as err:
                    proc = subprocess.Popen(
                        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=ROOT
                    )
                self.procs.append(proc)
                self.pending.append(b"")
                self.heard.append([])
                self.selector.register(proc.stdout, selectors.EVENT_READ, i)
        except BaseException:
            self.__exit__()
            raise

    def __enter__(self) -> Crew:
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs:
            proc.wait(EXIT_TIMEOUT)
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None and not pipe.closed:
                    pipe.close()
        self.selector.close()

    def wait_for(self, word: str, timeout: float, tick: Callable[[], None] | None = None, every: float = 0.2) -> None:
        """Until every worker has said `word`; `tick` runs every `every` seconds meanwhile."""
        deadline = time.monotonic() + timeout
        next_tick = time.monotonic()
        while not all(word in heard for heard in self.heard):
            now = time.monotonic()
            if now > deadline:
                late = sum(word not in heard for heard in self.heard)
                raise TimeoutError(f"{late} workers did not say {word!r} within {timeout:.0f} s")
            if tick is not None and now >= next_tick:
                tick()
                next_tick = now + every
            for key, _ in self.selector.select(timeout=max(0.0, min(every, deadline - now))):
                self._read(key.data)

    def _read(self, i: int) -> None:
        data = os.read(self.procs[i].stdout.fileno(), 4096)
        if not data:
            self.selector.unregister(self.procs[i].stdout)
            code = self.procs[i].wait(EXIT_TIMEOUT)
            raise RuntimeError(f"worker {i} exited ({code}) during the run:\n{self.stderr(i)}")
        lines = (self.pending[i] + data).split(b"\n")
        self.pending[i] = lines.pop()
        self.heard[i].extend(line.decode().strip() for line in lines)

    def send(self, word: str) -> None:
        for proc in self.procs:
            proc.stdin.write(f"{word}\n".encode())
            proc.stdin.flush()

    def finish(self) -> None:
        """Tell every worker to exit and wait for it; any failure is an error of the run."""
        self.send("exit")
        deadline = time.monotonic() + EXIT_TIMEOUT
        for i, proc in enumerate(self.procs):
            proc.stdin.close()
            code = proc.wait(max(1.0, deadline - time.monotonic()))
            if code != 0:
                raise RuntimeError(f"worker {i} exited with {code}:\n{self.stderr(i)}")

    def stderr(self, i: int) -> str:
        return (self.workdir / f"worker{i}.err").read_text(errors="replace")[-3000:]


def worker_command(db: str, dbname: str, kind: str, name: str, out: Path, **options: Any) -> list[str]:
    command = [sys.executable, __file__, "--db", db, "--worker", kind, "--dbname", dbname, "--name", name,
               "--out", str(out)]  # fmt: skip
    for key, value in options.items():
        command += [f"--{key.replace('_', '-')}", value if isinstance(value, str) else json.dumps(value)]
    return command


def create_row(name: str) -> None:
    """The sequence's row, made beforehand: the workers' first fetches measure connections, not row creation."""
    from django_segment_seq.models import Sequence

    Sequence.objects.create(name=name, step=1000)


def count_sessions(dbname: str) -> tuple[int, int]:
    """(client sessions on the benchmark database, client sessions on the whole server), on the parent's connection."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(*) FILTER (WHERE datname = %s), count(*) FROM pg_stat_activity"
                " WHERE backend_type = 'client backend'",
                [dbname],
            )
        else:
            cursor.execute(
                "SELECT COALESCE(SUM(DB = %s), 0), COUNT(*) FROM information_schema.PROCESSLIST"
                " WHERE COMMAND <> 'Daemon' AND USER <> 'system user'",
                [dbname],
            )
        on_db, on_server = cursor.fetchone()
    return int(on_db), int(on_server)


def server_limits() -> dict[str, int]:
    """max_connections (and PostgreSQL's slots kept for superusers), the ceiling of the start measurement."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT current_setting('max_connections'), current_setting('superuser_reserved_connections')"
            )
            limit, reserved = cursor.fetchone()
            return {"max_connections": int(limit), "superuser_reserved_connections": int(reserved)}
        cursor.execute("SELECT @@max_connections")
        return {"max_connections": int(cursor.fetchone()[0])}


def collect(outs: Iterable[Path]) -> tuple[list[int], list[dict[str, Any]]]:
    """Every number the workers wrote, and each worker's figures."""
    numbers: list[int] = []
    figures: list[dict[str, Any]] = []
    for out in outs:
        numbers.extend(int(line) for line in out.read_text().split())
        figures.append(json.loads(Path(f"{out}.json").read_text()))
    return numbers, figures


def repeated(numbers: list[int]) -> int:
    """How many distinct numbers were handed out more than once."""
    return sum(1 for times in collections.Counter(numbers).values() if times > 1)


def summed(figures: list[dict[str, Any]], key: str) -> int:
    return sum(f["stats"].get(key, 0) for f in figures)


def merged(figures: list[dict[str, Any]], key: str) -> dict[str, int]:
    total: collections.Counter[str] = collections.Counter()
    for f in figures:
        total.update(f[key])
    return dict(total)


def percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile (share 0-1); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def measure_steady(db: str, dbname: str, processes: int, seconds: float, workdir: Path) -> dict[str, Any]:
    """Extra server sessions per process while workers take numbers, and after they idled past CONNECTION_MAX_IDLE."""
    counted = db != "sqlite"
    name = "bench-connections-steady"
    outs = [workdir / f"steady{i}.txt" for i in range(processes)]
    segment_seq = {"CONNECTION_MAX_IDLE": MAX_IDLE}
    commands = [
        worker_command(db, dbname, "steady", name, out, seconds=seconds, segment_seq=segment_seq) for out in outs
    ]
    create_row(name)
    baseline = count_sessions(dbname)[0] if counted else 0
    busy: list[int] = []
    idle: dict[str, int] = {}
    with Crew(commands, workdir) as crew:
        crew.wait_for("ready", START_TIMEOUT)
        with_django = count_sessions(dbname)[0] if counted else 0
        crew.send("go")
        went = time.monotonic()

        def sample_busy() -> None:
            # Inside the busy window only: after every worker's first range, before the first one stops.
            if counted and went + 0.3 <= time.monotonic() <= went + seconds - 0.2:
                busy.append(count_sessions(dbname)[0] - baseline - processes)

        crew.wait_for("idle", seconds + PHASE_TIMEOUT, tick=sample_busy)
        idle_since = time.monotonic()
        while counted and time.monotonic() < idle_since + IDLE_WAIT:
            time.sleep(0.25)
            idle[f"{time.monotonic() - idle_since:.2f}"] = count_sessions(dbname)[0] - baseline - processes
        crew.finish()
    numbers, figures = collect(outs)
    result: dict[str, Any] = {
        "processes": processes,
        "seconds": seconds,
        "segment_seq": segment_seq,
        "numbers": len(numbers),
        "duplicates": repeated(numbers),
        "errors": merged(figures, "errors"),
        "ranges_fetched": summed(figures, "ranges_fetched"),
        "retries": summed(figures, "retries"),
        "failures": summed(figures, "failures"),
        "background_failures": summed(figures, "background_failures"),
    }
    if not counted:
        result["sessions"] = NOT_APPLICABLE
        return result
    after_idle = list(idle.values())[-1]
    result["sessions"] = {
        "parent": baseline,
        "django_connections": with_django - baseline,
        "extra_while_taking_samples": busy,
        "extra_while_taking": statistics.median(busy) if busy else None,
        "extra_per_process_while_taking": statistics.median(busy) / processes if busy else None,
        "idle_wait_seconds": IDLE_WAIT,
        "extra_during_idle": idle,  # seconds since the last worker went idle: extra sessions
        "extra_after_idle": after_idle,
        "extra_per_process_after_idle": after_idle / processes,
    }
    return result


def measure_start(db: str, dbname: str, processes: int, count: int, workdir: Path) -> dict[str, Any]:
    """`processes` workers started together: each opens its Django connection, then takes 1 + `count` numbers."""
    if db == "sqlite":
        return {"processes": processes, "applicable": False, "reason": NOT_APPLICABLE}
    name = "bench-connections-start"
    outs = [workdir / f"start{i}.txt" for i in range(processes)]
    commands = [worker_command(db, dbname, "start", name, out, count=count) for out in outs]
    create_row(name)
    before = count_sessions(dbname)
    peak = list(before)
    launched = time.monotonic()
    with Crew(commands, workdir) as crew:
        crew.wait_for("ready", START_TIMEOUT)  # imported and set up; no connection yet
        ready = time.monotonic()

        def track_peak() -> None:
            now = count_sessions(dbname)
            peak[0], peak[1] = max(peak[0], now[0]), max(peak[1], now[1])

        crew.send("go")
        went = time.monotonic()
        crew.wait_for("done", PHASE_TIMEOUT, tick=track_peak, every=0.1)
        finished = time.monotonic()
        held = count_sessions(dbname)  # everything still open, as long-lived web workers keep it
        crew.finish()
    peak = [max(peak[0], held[0]), max(peak[1], held[1])]
    numbers, figures = collect(outs)
    # A process without a number counts as the slowest (null in the JSON when a percentile lands on one).
    firsts = [math.inf if f["gave_up"] else f["first_number_seconds"] for f in figures]
    connected = sum(1 for f in figures if f["connected"])
    errors = merged(figures, "errors")
    return {
        "applicable": True,
        "processes": processes,
        "numbers_per_process": count + 1,
        "first_number_timeout_seconds": FIRST_NUMBER_TIMEOUT,
        "numbers": len(numbers),
        "duplicates": repeated(numbers),
        "errors": sum(errors.values()),
        "errors_by_kind": errors,
        "processes_with_errors": sum(1 for f in figures if f["errors"]),
        "processes_without_a_number": sum(1 for f in figures if f["gave_up"]),
        "processes_short_of_numbers": sum(1 for f in figures if not f["complete"] and not f["gave_up"]),
        "processes_without_a_django_connection": processes - connected,
        "django_connect_errors": merged(figures, "connect_errors"),
        "retries": summed(figures, "retries"),
        "failures": summed(figures, "failures"),
        "background_failures": summed(figures, "background_failures"),
        "background_fetches": summed(figures, "background_fetches"),
        "ranges_fetched": summed(figures, "ranges_fetched"),
        "first_number_seconds": {
            key: _finite(value)
            for key, value in (
                ("p50", percentile(firsts, 0.50)),
                ("p99", percentile(firsts, 0.99)),
                ("max", max(firsts, default=None)),
            )
        },
        "first_number_seconds_p50_of_processes_with_one": percentile([t for t in firsts if not math.isinf(t)], 0.50),
        "connect_seconds_p50": _finite(percentile([_or_inf(f["connect_seconds"]) for f in figures], 0.50)),
        "startup_seconds": ready - launched,
        "run_seconds": finished - went,
        "sessions": {
            "on_database_before": before[0],
            "on_server_before": before[1],
            "peak_on_database": peak[0],
            "peak_on_server": peak[1],
            "on_database_at_end": held[0],
            # Less the parent's and the Django connections the workers got (some may have got none).
            "extra_at_end": held[0] - before[0] - connected,
            "extra_per_process_at_end": (held[0] - before[0] - connected) / processes,
        },
    }


def run(
    db: str, dbname: str, *, smoke: bool = False, keep: Path | None = None, start_numbers: int | None = None
) -> dict[str, Any]:
    """Both measurements on an existing database; Django must be set up on it (bench.py's scratch database).

    With `keep`, the workers' files (every number each took, one a line, and its figures) stay in that folder.
    """
    from django.db import connection

    from django_segment_seq import close_connections, wait_for_prefetch
    from django_segment_seq.conf import DEFAULTS

    # The parent keeps its Django connection only: it counts the sessions, and 96 workers need the rest.
    wait_for_prefetch(30)
    close_connections()
    started = time.time()
    results: dict[str, Any] = {
        "db": db,
        "vendor_version": version(connection),
        "smoke": smoke,
        "cpus": os.cpu_count(),
        "commit": _commit(),
        "connection_max_idle_known": "CONNECTION_MAX_IDLE" in DEFAULTS,
        "server": server_limits() if db != "sqlite" else NOT_APPLICABLE,
    }
    with tempfile.TemporaryDirectory(prefix="bench-connections-") as tmp:
        workdir = keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        results["steady"] = measure_steady(
            db, dbname, size("steady_processes", smoke), size("steady_seconds", smoke), workdir
        )
        results["start"] = measure_start(
            db, dbname, size("start_processes", smoke), start_numbers or size("start_numbers", smoke), workdir
        )
    results["seconds"] = time.time() - started
    return results


def _commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=7"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


# --- report -------------------------------------------------------------------------------------


def table(r: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Rows of (measure, value, target)."""
    steady, start = r["steady"], r["start"]
    n = steady["processes"]
    rows: list[tuple[str, str, str]] = []
    if isinstance(r["server"], dict):
        rows.append(("server max_connections", f"{r['server']['max_connections']}", ""))
    sessions = steady["sessions"]
    if isinstance(sessions, dict):
        rows += [
            (
                f"steady, {n} processes: Django sessions (+ parent's)",
                f"{sessions['django_connections']} (+{sessions['parent']})",
                f"{n} (+1)",
            ),
            (
                "steady: extra sessions per process, taking numbers",
                _num(sessions["extra_per_process_while_taking"]),
                "",
            ),
            (
                f"steady: extra sessions per process, {sessions['idle_wait_seconds']:.0f} s idle "
                f"(max idle {MAX_IDLE:g} s)",
                _num(sessions["extra_per_process_after_idle"]),
                "0",
            ),
        ]
    else:
        rows.append(("steady: server sessions", sessions, ""))
    rows.append(
        (
            "steady: numbers / duplicates / errors",
            f"{steady['numbers']:,} / {steady['duplicates']} / {sum(steady['errors'].values())}",
            "dups 0",
        )
    )
    if not start["applicable"]:
        rows.append((f"start, {start['processes']} processes", start["reason"], ""))
        return rows
    p = start["processes"]
    kinds = "; ".join(
        f"{kind} x{times}" for kind, times in sorted(start["errors_by_kind"].items(), key=lambda kv: -kv[1])
    )
    firsts = start["first_number_seconds"]
    rows += [
        (f"start, {p} processes: errors raised to callers", f"{start['errors']:,}", "0"),
        (
            "start: processes with errors / without a number / short of numbers",
            f"{start['processes_with_errors']} / {start['processes_without_a_number']} / "
            f"{start['processes_short_of_numbers']}",
            "0 / 0 / 0",
        ),
        ("start: error kinds", kinds or "none", ""),
        (
            "start: Django connections refused / processes left without one",
            f"{sum(start['django_connect_errors'].values())} / {start['processes_without_a_django_connection']}",
            "0 / 0",
        ),
        ("start: retries (lost CAS) / failures (DB errors retried)", f"{start['retries']} / {start['failures']}", ""),
        ("start: background fetch failures", f"{start['background_failures']}", "0"),
        (
            "start: time to first number p50 / p99 / max, ms",
            " / ".join(_ms(firsts[k], start["first_number_timeout_seconds"]) for k in ("p50", "p99", "max")),
            "",
        ),
        (
            "start: time to first number p50 of processes that got one, ms",
            _ms(start["first_number_seconds_p50_of_processes_with_one"]),
            "",
        ),
        (
            "start: peak sessions on database / server",
            f"{start['sessions']['peak_on_database']} / {start['sessions']['peak_on_server']}",
            "",
        ),
        (
            "start: extra sessions at the end (per process)",
            f"{start['sessions']['extra_at_end']} ({_num(start['sessions']['extra_per_process_at_end'])})",
            "",
        ),
        ("start: numbers / duplicates", f"{start['numbers']:,} / {start['duplicates']}", "dups 0"),
    ]
    return rows


def _or_inf(value: float | None) -> float:
    return math.inf if value is None else value


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isinf(value) else value


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ms(seconds: float | None, timeout: float | None = None) -> str:
    """Milliseconds; None stands for a process that had no number within `timeout` (or for no figure)."""
    if seconds is None:
        return "-" if timeout is None else f">{timeout * 1000:,.0f}"
    return f"{seconds * 1000:,.0f}"


def report(results: dict[str, Any], json_path: str | None = None) -> Path:
    """Print the table and write the figures, with the table, beside bench.py's results."""
    rows = table(results)
    results["table"] = [list(row) for row in rows]
    width = max(len(row[0]) for row in rows)
    print(
        f"\ndjango-segment-seq connections benchmark on {results['db']} ({results['vendor_version']}), "
        f"{results['cpus']} CPUs, commit {results['commit']}{', smoke size' if results['smoke'] else ''}"
    )
    for measure, value, target in rows:
        print(f"  {measure:<{width}}  {value:>24}  {target}")
    path = Path(json_path) if json_path else ROOT / "benchmarks" / f"results-connections-{results['db']}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nfigures written to {path}")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, choices=["sqlite", "mariadb", "postgres"])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (4 processes): checks that every part runs")
    parser.add_argument("--json", help="where to write the figures (default benchmarks/results-connections-DB.json)")
    parser.add_argument(
        "--keep-numbers", type=Path, help="keep every worker's numbers (steady*.txt, start*.txt) in this folder"
    )
    parser.add_argument(
        "--start-numbers",
        type=int,
        help="numbers each start worker takes after its first (default 300; 3,000 makes "
        "every worker fetch several ranges of the one row while the others start)",
    )
    parser.add_argument("--worker", choices=["steady", "start"], help=argparse.SUPPRESS)
    parser.add_argument("--dbname", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--segment-seq", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return
    with scratch_database(args.db) as connection:
        results = run(
            args.db,
            str(connection.settings_dict["NAME"]),
            smoke=args.smoke,
            keep=args.keep_numbers,
            start_numbers=args.start_numbers,
        )
    report(results, args.json)


if __name__ == "__main__":
    main()
