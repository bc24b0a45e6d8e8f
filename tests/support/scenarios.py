"""Worker processes for scenarios that can hang or need settings of their own; each prints one JSON line.

Run as `python -m tests.support.scenarios NAME [ARGS...]` with the environment from tests.conftest.worker_env.
Tests start them through run_scenario(), whose timeout turns a hang into a test failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

SCENARIOS: dict[str, Callable[..., Any]] = {}


def scenario(func: Callable[..., Any]) -> Callable[..., Any]:
    SCENARIOS[func.__name__.replace("_", "-")] = func
    return func


def run_scenario(name: str, *args: object, timeout: float = 60, **env: str) -> Any:
    """Run one scenario in a new process; fail the test if it hangs past `timeout` seconds or exits with an error."""
    from tests.conftest import ROOT, worker_env

    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.scenarios", name, *map(str, args)],
            cwd=ROOT,
            env=worker_env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        pytest.fail(f"scenario {name} {args} hung: not finished after {timeout} s\n{err[-2000:]}")
    assert done.returncode == 0, f"scenario {name} {args} failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def start_holder(*args: object) -> subprocess.Popen[str]:
    """Start a lock-holding scenario in the background and return once it says it holds the lock."""
    from tests.conftest import ROOT

    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.scenarios", *map(str, args)],
        cwd=ROOT,
        env=dict(os.environ) if "SEGMENT_SEQ_TEST_DB_NAME" in os.environ else _parent_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == "locked", f"lock holder {args} said {line!r}"
    return proc


def _parent_env() -> dict[str, str]:
    from tests.conftest import worker_env

    return worker_env()


def server_sessions() -> int:
    """TCP connections this process has open to the database server: one per server session."""
    from django.db import connection

    port = int(connection.settings_dict.get("PORT") or {"mysql": 3306, "postgresql": 5432}[connection.vendor])
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            with open(table) as file:
                lines = file.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            established = fields[3] == "01"
            if established and remote_port == port and fields[9] in inodes:
                count += 1
    return count


# Holders of locks, run beside a scenario.


@scenario
def hold_sqlite_lock(path: str, seconds: str) -> None:
    """Hold SQLite's write lock on `path` (BEGIN IMMEDIATE) for `seconds`, as another process's writer would."""
    import sqlite3

    db = sqlite3.connect(path, isolation_level=None, timeout=20)
    db.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(float(seconds))
    db.execute("COMMIT")
    db.close()


@scenario
def hold_row(name: str, seconds: str) -> None:
    """Hold the Sequence row `name` locked (SELECT ... FOR UPDATE) for `seconds` in a transaction of its own."""
    from django.db import transaction

    from django_segment_seq.models import Sequence

    with transaction.atomic():
        assert list(Sequence.objects.select_for_update().filter(name=name))
        print("locked", flush=True)
        time.sleep(float(seconds))


# Scenarios.


@scenario
def take(name: str, count: str) -> dict[str, Any]:
    """`count` numbers through next_value(), then a plain exit (with AUTOCOMMIT off: nothing committed by Django)."""
    from django_segment_seq import next_value

    return {"numbers": [next_value(name) for _ in range(int(count))]}


@scenario
def take_many(name: str, count: str) -> dict[str, Any]:
    """One next_values() call of `count` numbers; a SequenceError is reported, not raised."""
    from django_segment_seq import SequenceError, next_values

    try:
        return {"numbers": list(next_values(name, int(count))), "error": None}
    except SequenceError as exc:
        return {"numbers": [], "error": f"{type(exc).__name__}: {exc}"}


@scenario
def checks() -> dict[str, Any]:
    """The system checks' messages under this process's settings."""
    from django.core import checks as django_checks

    return {
        "messages": [
            {"id": m.id, "level": m.level, "msg": str(m.msg), "hint": str(m.hint or "")}
            for m in django_checks.run_checks(include_deployment_checks=False)
        ]
    }


@scenario
def caller_holds_row(variant: str) -> dict[str, Any]:
    """Numbers taken inside a transaction that already holds the sequence row (created, updated or locked there)."""
    from django.db import transaction

    from django_segment_seq import next_value
    from django_segment_seq.models import Sequence
    from tests.testapp.models import CountedInvoice, Order

    class Rollback(Exception):
        pass

    result: dict[str, Any] = {"in_transaction": [], "after": []}
    if variant == "create":
        with transaction.atomic():
            Sequence.objects.create(name="order", step=10)
            result["in_transaction"] = [Order.objects.create().order_no for _ in range(3)]
    elif variant == "update":
        with transaction.atomic():
            Sequence.objects.filter(name="order").update(step=5)
            result["in_transaction"] = [Order.objects.create().order_no for _ in range(3)]
    elif variant == "select-for-update":
        with transaction.atomic():
            list(Sequence.objects.select_for_update().filter(name="order"))
            result["in_transaction"] = [Order.objects.create().order_no for _ in range(3)]
    elif variant == "rollback":
        try:
            with transaction.atomic():
                Sequence.objects.create(name="order", step=10)
                result["in_transaction"] = [Order.objects.create().order_no for _ in range(3)]
                raise Rollback
        except Rollback:
            pass
        result["after"] = [Order.objects.create().order_no for _ in range(3)]
    elif variant == "gapless":
        with transaction.atomic():
            invoice = CountedInvoice.objects.create()  # locks the "counted-invoice" row until commit
            result["in_transaction"] = [invoice.number, next_value("counted-invoice")]
    elif variant == "migration":
        # A data migration: historical models, the row created and model rows saved in one transaction.
        from django.apps import apps as global_apps
        from django.db.migrations.state import ProjectState

        historical = ProjectState.from_apps(global_apps).apps
        HistoricalSequence = historical.get_model("django_segment_seq", "Sequence")
        HistoricalOrder = historical.get_model("testapp", "Order")
        with transaction.atomic():
            HistoricalSequence.objects.create(name="order", step=10)
            result["in_transaction"] = [HistoricalOrder.objects.create().order_no for _ in range(3)]
    else:
        raise SystemExit(f"unknown variant {variant!r}")
    return result


@scenario
def unrelated_sequence(count: str) -> dict[str, Any]:
    """Sequence "a" is stuck behind another session's row lock; how long do `count` numbers of "b" take?"""
    from django_segment_seq import SequenceError, next_value, wait_for_prefetch

    taken_a: list[int] = [next_value("a")]
    wait_for_prefetch(10)
    holder = start_holder("hold-row", "a", 8)
    stalled = threading.Event()

    def take_a() -> None:
        # Runs "a" until its next fetch is stuck behind the lock (it then waits here, or gives up with an error).
        try:
            while True:
                taken_a.append(next_value("a"))
        except SequenceError:
            pass
        finally:
            stalled.set()

    threading.Thread(target=take_a, daemon=True).start()
    # Wait until "a" stops moving: its fetch is then waiting for the row lock.
    seen = -1
    while len(taken_a) != seen and not stalled.is_set():
        seen = len(taken_a)
        time.sleep(0.3)
    started = time.monotonic()
    taken_b = [next_value("b") for _ in range(int(count))]
    elapsed = time.monotonic() - started
    holder.kill()
    holder.wait()
    print(json.dumps({"elapsed": elapsed, "a": list(taken_a), "b": taken_b}), flush=True)
    os._exit(0)  # "a" may still be waiting for its fetch; nothing more to wait for


@scenario
def idle_connections(name: str, idle: str) -> dict[str, Any]:
    """Sessions of this process before, right after taking numbers, and after idling `idle` seconds."""
    from django.db import connection

    from django_segment_seq import next_value, wait_for_prefetch

    connection.ensure_connection()
    before = server_sessions()
    numbers = [next_value(name) for _ in range(40)]
    wait_for_prefetch(10)
    busy = server_sessions()
    time.sleep(float(idle))
    after_idle = server_sessions()
    numbers += [next_value(name) for _ in range(40)]
    return {"before": before, "busy": busy, "after_idle": after_idle, "numbers": numbers}


@scenario
def sessions_while_taking(name: str) -> dict[str, Any]:
    """Sessions of this process, Django's connection open in autocommit, after every number taken (prefetch off)."""
    from django.db import connection

    from django_segment_seq import next_value, next_values

    connection.ensure_connection()
    counts = [server_sessions()]
    numbers: list[int] = []
    for _ in range(12):
        numbers.append(next_value(name))
        counts.append(server_sessions())
    numbers += next_values(name, 25)
    counts.append(server_sessions())
    return {"counts": counts, "numbers": numbers, "in_atomic_block": connection.in_atomic_block}


@scenario
def fork_children(name: str, out_dir: str) -> dict[str, Any]:
    """The parent caches a range (an idle private connection stays open), then forks children that exit normally."""
    from django_segment_seq import next_value, sequence_stats

    numbers = [next_value(name)]
    for child in range(3):
        pid = os.fork()
        if pid == 0:
            theirs = [next_value(name) for _ in range(7)]
            with open(os.path.join(out_dir, f"child{child}.txt"), "w") as fh:
                fh.write(" ".join(map(str, theirs)))
            sys.exit(0)  # a normal exit: atexit handlers and finalizers run
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, f"child {child} failed"
        numbers += [next_value(name) for _ in range(6)]  # past the cached range: an allocation
    stats = sequence_stats()[("default", name)]
    return {"numbers": numbers, "failures": stats.failures, "ranges_fetched": stats.ranges_fetched}


@scenario
def wal_read_then_write(rounds: str) -> dict[str, Any]:
    """On a fresh WAL-mode file: read, take a number that needs a fetch, write; all in one transaction."""
    from django.core.management import call_command
    from django.db import OperationalError, connection, transaction

    from django_segment_seq import clear_cache, next_value
    from django_segment_seq.models import Sequence
    from tests.testapp.models import Order

    call_command("migrate", verbosity=0, run_syncdb=True)
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode=WAL")
        mode = cursor.fetchone()[0]
    Sequence.objects.create(name="s", step=5)
    Order.objects.create(order_no=0)
    errors: list[str] = []
    numbers: list[int] = []
    for _ in range(int(rounds)):
        clear_cache()  # the next number needs a fetch
        try:
            with transaction.atomic():
                list(Order.objects.all()[:1])
                number = next_value("s")
                Order.objects.create(order_no=number)
            numbers.append(number)
        except OperationalError as exc:
            errors.append(str(exc))
    return {"journal_mode": mode, "errors": errors, "numbers": numbers}


@scenario
def interactive(name: str) -> None:
    """Takes orders from stdin, one a line, and answers each with one JSON line, for tests that interleave processes.

    `take N`, `close` (close_connections()), `close-django` (Django's connections), `wait` (for a
    background fetch), `fork N` (a child takes N numbers, prints them and exits normally), `exit` (a
    normal exit: atexit runs), `hard-exit` (os._exit).
    """
    from django_segment_seq import close_connections, next_value, sequence_stats, wait_for_prefetch

    def say(answer: dict[str, Any]) -> None:
        print(json.dumps(answer), flush=True)

    say({"ready": os.getpid()})
    for line in sys.stdin:
        order, *rest = line.split()
        if order == "take":
            say({"numbers": [next_value(name) for _ in range(int(rest[0]))]})
        elif order == "close":
            close_connections()
            say({"closed": True})
        elif order == "close-django":
            from django.db import connections

            connections.close_all()
            say({"closed": True})
        elif order == "wait":
            wait_for_prefetch(30)
            say({"background_fetches": sum(s.background_fetches for s in sequence_stats().values())})
        elif order == "fork":
            pid = os.fork()
            if pid == 0:
                say({"numbers": [next_value(name) for _ in range(int(rest[0]))]})
                sys.exit(0)  # a normal exit: atexit handlers run in the child
            _, status = os.waitpid(pid, 0)
            say({"child_exit": os.waitstatus_to_exitcode(status)})
        elif order == "exit":
            say({"exiting": True})
            sys.exit(0)
        elif order == "hard-exit":
            os._exit(0)
        else:
            raise SystemExit(f"unknown order {order!r}")


def main(name: str, *args: str) -> None:
    import django

    if name not in ("hold-sqlite-lock",):
        django.setup()
    result = SCENARIOS[name](*args)
    if result is not None:
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    main(sys.argv[1], *sys.argv[2:])
