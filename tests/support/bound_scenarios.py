"""Processes for the bound tests: table locks, a caller whose session was killed, a server that refuses connections.

Run as `python -m tests.support.bound_scenarios NAME [ARGS...]` with the environment from tests.conftest.worker_env.
Each scenario prints JSON lines on stdout and, where the test has to act between two of its steps (take a
table lock, kill a session), reads one order a line from stdin. Tests drive them through Scenario, whose
every wait has a timeout, so a process that hangs fails the test instead of hanging it.

Every outcome a scenario reports carries the exception's full type name, so a test can tell the app's named
errors (django_segment_seq.exceptions) from raw database errors (django.db.utils).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

SCENARIOS: dict[str, Callable[..., Any]] = {}

# The app's named errors, by the module that defines them.
NAMED_ERROR_MODULES = ("django_segment_seq.exceptions", "django_segment_seq.snowflake.exceptions")


def scenario(func: Callable[..., Any]) -> Callable[..., Any]:
    SCENARIOS[func.__name__.replace("_", "-")] = func
    return func


def say(answer: dict[str, Any]) -> None:
    print(json.dumps(answer), flush=True)


def wait_for_order(timeout: float | None = None) -> str:
    """The parent's next line; "" when it closed the pipe or `timeout` passed."""
    if timeout is not None:
        ready, _, _ = select.select([sys.stdin], [], [], timeout)
        if not ready:
            return ""
    return sys.stdin.readline().strip()


def attempt(action: Callable[[], Any]) -> dict[str, Any]:
    """Run `action`; its result or the exception it raised (full type name and message), and how long it took."""
    started = time.monotonic()
    try:
        value = action()
    except Exception as exc:  # noqa: BLE001 - reported to the test, which judges it
        return {
            "value": None,
            "error_type": f"{type(exc).__module__}.{type(exc).__qualname__}",
            "error": " ".join(str(exc).split())[:600],
            "elapsed": round(time.monotonic() - started, 3),
        }
    return {"value": value, "error_type": None, "error": None, "elapsed": round(time.monotonic() - started, 3)}


def is_named_error(error_type: str | None) -> bool:
    return error_type is not None and error_type.rsplit(".", 1)[0] in NAMED_ERROR_MODULES


# The test's side ---------------------------------------------------------------------------------------------------


class Scenario:
    """One scenario process, driven line by line; every read has a timeout."""

    def __init__(self, name: str, *args: object, **env: str) -> None:
        from tests.conftest import ROOT, worker_env

        self.label = f"{name} {' '.join(map(str, args))}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.bound_scenarios", name, *map(str, args)],
            cwd=ROOT,
            env=worker_env(**env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()

    @staticmethod
    def _pump(stream: Any, lines: queue.Queue[str | None]) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def stderr(self) -> str:
        return "".join(self._stderr)[-4000:]

    def read(self, timeout: float) -> dict[str, Any]:
        """The next JSON line; the test fails if none comes within `timeout` seconds or the process died."""
        import pytest

        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(0.0, left))
            except queue.Empty:
                self.kill()
                pytest.fail(f"scenario {self.label} hung: no answer within {timeout} s\n{self.stderr()}")
            if line is None:
                self.proc.wait(10)
                time.sleep(0.1)  # let the stderr pump catch up
                pytest.fail(
                    f"scenario {self.label} ended (exit {self.proc.returncode}) without answering\n{self.stderr()}"
                )
            if line.startswith("{"):
                return json.loads(line)

    def send(self, order: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(order + "\n")
        self.proc.stdin.flush()

    def ask(self, order: str, timeout: float) -> dict[str, Any]:
        self.send(order)
        return self.read(timeout)

    def wait(self, timeout: float) -> int:
        import pytest

        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"scenario {self.label} did not exit within {timeout} s\n{self.stderr()}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Scenario:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


class TableLockHolder(Scenario):
    """Another session holding the whole Sequence table locked, as ALTER TABLE or VACUUM FULL would, for `seconds`.

    PostgreSQL: LOCK TABLE ... IN ACCESS EXCLUSIVE MODE in a transaction; MariaDB: LOCK TABLES ... WRITE.
    Released early by release(), or when the test ends.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__("hold-table-lock", seconds)
        answer = self.read(30)
        assert answer.get("locked"), f"the table lock holder said {answer}"
        self.released = False

    def release(self) -> None:
        """Release the lock now (or find it released already, its time up) and wait for the holder to exit."""
        if not self.released:
            # A broken pipe: its time was up, it released on its own and is gone or going.
            with contextlib.suppress(BrokenPipeError):
                self.send("release")
            answer = self.read(30)
            assert answer.get("released"), f"the table lock holder said {answer}"
        self.released = True
        self.wait(30)

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self.release()
        finally:
            self.kill()


# Shared by the scenarios ---------------------------------------------------------------------------------------------


def session_id(connection: Any) -> int:
    """The server's id of the session behind `connection`: the backend pid, or MariaDB's connection id."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()" if connection.vendor == "postgresql" else "SELECT CONNECTION_ID()")
        return int(cursor.fetchone()[0])


def end_session(killer: Any, session: int) -> None:
    """End `session` from another connection (pg_terminate_backend, KILL) and wait until the server shows it gone."""
    postgres = killer.vendor == "postgresql"
    with killer.cursor() as cursor:
        if postgres:
            cursor.execute("SELECT pg_terminate_backend(%s)", [session])
            assert cursor.fetchone()[0], f"pg_terminate_backend({session}) said no"
        else:
            cursor.execute(f"KILL CONNECTION {int(session)}")
        look = (
            "SELECT 1 FROM pg_stat_activity WHERE pid = %s"
            if postgres
            else "SELECT 1 FROM information_schema.processlist WHERE id = %s"
        )
        deadline = time.monotonic() + 10
        while True:
            cursor.execute(look, [session])
            if cursor.fetchone() is None:
                return
            assert time.monotonic() < deadline, f"session {session} still there 10 s after it was ended"
            time.sleep(0.02)


# Lock holders ------------------------------------------------------------------------------------------------------


@scenario
def hold_table_lock(seconds: str) -> None:
    """Hold the Sequence table locked for everyone else for `seconds`, or until the parent says "release"."""
    from django.db import connection, transaction

    from django_segment_seq.models import Sequence

    table = connection.ops.quote_name(Sequence._meta.db_table)
    if connection.vendor == "postgresql":
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            say({"locked": True})
            wait_for_order(float(seconds))
    else:
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLES {table} WRITE")
            say({"locked": True})
            wait_for_order(float(seconds))
            cursor.execute("UNLOCK TABLES")
    say({"released": True})


# A: the Sequence table locked as a whole ---------------------------------------------------------------------------


def _table_lock_action(what: str, name: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(warm-up, action) for what the caller does while the table is locked; the warm-up runs before the lock."""
    from django.core.management import call_command

    from django_segment_seq import close_connections, next_value
    from tests.testapp.models import Company, CompanyOrder, DailyOrder

    def command(*args: str) -> Callable[[], Any]:
        def run() -> str:
            out = io.StringIO()
            call_command("segment_seq", *args, stdout=out, stderr=io.StringIO())
            return out.getvalue()[-200:]

        return run

    def nothing() -> None:
        return None

    if what == "value":
        return nothing, lambda: next_value(name)
    if what == "formatted-save":
        # The first save of the day: the day's row is created, then numbered.
        return nothing, lambda: DailyOrder.objects.create().order_no
    if what == "scoped-save":
        # The scope's row exists and this process knows it (step 1: every save needs a new block).
        company = Company.objects.get(code=name)
        return (
            lambda: CompanyOrder.objects.create(company=company).number,
            lambda: CompanyOrder.objects.create(company=company).number,
        )
    if what in ("give-back-close", "give-back-exit"):
        # A cached range with unused numbers, given back by close_connections() or at exit.
        return lambda: [next_value(name) for _ in range(3)], close_connections
    if what.startswith("command-"):
        sub = what[len("command-") :]
        args = {"list": ("list",), "show": ("show", name), "set": ("set", name, "--step", "7")}[sub]
        return nothing, command(*args)
    raise SystemExit(f"unknown action {what!r}")


@scenario
def under_table_lock(context: str, what: str, name: str) -> None:
    """Warm up, say "ready"; at "go" (the table now locked elsewhere) do `what` once, in autocommit or atomic().

    Then, at "after" (the lock released), do it three more times (a number each), and at "exit" leave normally.
    For give-back-exit, "go" is answered at once and the process exits: the test times the exit.
    """
    from django.db import connection, transaction

    from django_segment_seq import next_value

    connection.ensure_connection()  # as a web worker's: open, in autocommit, before the lock is taken
    warm_up, action = _table_lock_action(what, name)
    warmed = attempt(warm_up)
    say({"ready": True, "warm_up": warmed})
    if wait_for_order() != "go":
        return
    if what == "give-back-exit":
        say({"exiting": True})
        sys.exit(0)  # a normal exit: the atexit give-back runs
    if context == "atomic":
        outcome: dict[str, Any] = {}
        try:
            with transaction.atomic():
                outcome = attempt(action)
        except Exception as exc:  # noqa: BLE001 - leaving the block is Django's business, reported apart
            outcome["atomic_exit_error"] = f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
    else:
        outcome = attempt(action)
    say(outcome)
    if wait_for_order() != "after":
        return
    if what in ("value", "formatted-save", "scoped-save"):
        later = [attempt(action) for _ in range(3)]
    else:
        later = [attempt(lambda: next_value(name)) for _ in range(3)]
    say({"after": later})
    wait_for_order()


# B: the caller's own session killed --------------------------------------------------------------------------------


@scenario
def dead_caller(context: str, noticed: str, name: str) -> None:
    """The caller's Django session is ended by another connection, then next_value(name) is called twice.

    `context`: autocommit, or atomic (a transaction the caller had opened with a query of its own).
    `noticed`: "noticed" if the caller ran a query of its own on the dead session (and caught its error) first.
    The row is expected busy: another session holds it with SELECT ... FOR UPDATE.
    """
    from django.db import connection, connections, transaction

    from django_segment_seq import next_value
    from tests.testapp.models import Order

    connection.ensure_connection()
    session = session_id(connection)
    killer = connections.create_connection("default")
    report: dict[str, Any] = {"session": session}

    def kill_and_take() -> None:
        end_session(killer, session)
        if noticed == "noticed":
            report["own_query"] = attempt(lambda: Order.objects.count())
        report["attempts"] = [attempt(lambda: next_value(name)) for _ in range(2)]

    try:
        if context == "atomic":
            try:
                with transaction.atomic():
                    Order.objects.count()  # the caller's transaction is open on the server
                    kill_and_take()
            except Exception as exc:  # noqa: BLE001 - leaving the block is Django's business, reported apart
                report["atomic_exit_error"] = f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
        else:
            kill_and_take()
    finally:
        killer.close()
    say(report)


# C: the server refuses new connections -----------------------------------------------------------------------------


def _second_connection_refused() -> str | None:
    """Whether this login may open no second session now; the server's refusal, or None if it let one in."""
    from django.db import DatabaseError, connections

    extra = connections.create_connection("default")
    try:
        extra.ensure_connection()
    except DatabaseError as exc:
        return " ".join(str(exc).split())[:300]
    extra.close()
    return None


@scenario
def refused_connections(context: str, what: str, count: str, tag: str) -> None:
    """This process's login may hold one session, which Django's connection holds: every private connection is refused.

    `what` is done `count` times, each in autocommit or in its own atomic() block that holds no Sequence row:
    existing (next_value of the existing row "pressed", prefetch on), first-use (next_value of "first-use",
    created on first use), formatted-save (DailyOrder, the day's row created on first use), scoped-save
    (CompanyOrder of the company with code `tag`, the scope's row created on first use).
    """
    from django.db import connection, transaction

    from django_segment_seq import next_value, sequence_stats, wait_for_prefetch
    from tests.testapp.models import Company, CompanyOrder, DailyOrder

    connection.ensure_connection()
    refused = _second_connection_refused()
    company = Company.objects.get(code=tag) if what == "scoped-save" else None
    actions: dict[str, Callable[[], Any]] = {
        "existing": lambda: next_value("pressed"),
        "first-use": lambda: next_value("first-use"),
        "formatted-save": lambda: DailyOrder.objects.create().order_no,
        "scoped-save": lambda: CompanyOrder.objects.create(company=company).number,
    }
    action = actions[what]
    outcomes = []
    for _ in range(int(count)):
        if context == "atomic":
            outcome: dict[str, Any] = {}
            try:
                with transaction.atomic():
                    outcome = attempt(action)
            except Exception as exc:  # noqa: BLE001 - reported apart
                outcome["atomic_exit_error"] = f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
        else:
            outcome = attempt(action)
        outcomes.append(outcome)
        if outcome.get("error_type") and context == "autocommit":
            break
    wait_for_prefetch(10)
    fetches = {
        name: {"background": stats.background_fetches, "background_failures": stats.background_failures}
        for (_alias, name), stats in sequence_stats().items()
    }
    say(
        {
            "second_connection_refused": refused,
            "outcomes": outcomes,
            "user": connection.settings_dict["USER"],
            "fetches": fetches,
        }
    )


def main(name: str, *args: str) -> None:
    import django

    django.setup()
    SCENARIOS[name](*args)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    main(sys.argv[1], *sys.argv[2:])
