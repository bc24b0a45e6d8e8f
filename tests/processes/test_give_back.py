"""A clean exit gives the unused rest of a process's ranges back, so a restart continues without a gap; never a repeat.

Every test runs real processes against the test database and checks every number handed out for
repeats; the ones that show the give-back also run with GIVE_BACK_UNUSED off, where the gap must stay.
"""

from __future__ import annotations

import json
import queue
import random
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from django.conf import settings
from django.db import connections
from django.test import override_settings

from django_segment_seq import close_connections, next_value, wait_for_prefetch
from django_segment_seq.models import Sequence
from tests.conftest import ROOT, assert_unique, worker_env
from tests.support.scenarios import run_scenario, start_holder

ON_SQLITE = settings.BACKEND == "sqlite"
ON_POSTGRES = settings.BACKEND == "postgres"
# Prefetch needs, on SQLite, the Sequence table in a file of its own (see test_prefetch.py).
PREFETCH_ALIAS = "sequences" if ON_SQLITE else "default"
pytestmark = pytest.mark.django_db(transaction=True, databases=["default", PREFETCH_ALIAS])

TIMEOUT = 60
OFF = {"SEGMENT_SEQ_TEST_SETTINGS": json.dumps({"GIVE_BACK_UNUSED": False})}


def settings_env(**keys: Any) -> dict[str, str]:
    return {"SEGMENT_SEQ_TEST_SETTINGS": json.dumps(keys)}


def prefetch_env(**keys: Any) -> dict[str, str]:
    """A worker with prefetch on, its Sequence table where prefetch runs (on SQLite, the test's second file)."""
    env = settings_env(PREFETCH=True, PREFETCH_AT=0.2, ADAPTIVE_STEP=False, **keys)
    if ON_SQLITE:
        env["SEGMENT_SEQ_TEST_SEQUENCES_DB_NAME"] = str(connections[PREFETCH_ALIAS].settings_dict["NAME"])
    return env


class Worker:
    """A process running the `interactive` scenario: each order gets one JSON answer, within a timeout."""

    def __init__(self, name: str, **env: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.scenarios", "interactive", name],
            cwd=ROOT,
            env=worker_env(**env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert "ready" in self._answer()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def _answer(self) -> dict[str, Any]:
        try:
            return json.loads(self.lines.get(timeout=TIMEOUT))  # type: ignore[no-any-return]
        except queue.Empty:
            self.proc.kill()
            _, err = self.proc.communicate()
            pytest.fail(f"worker {self.proc.pid} did not answer within {TIMEOUT} s:\n{err[-3000:]}")

    def order(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def take(self, count: int) -> list[int]:
        return list(self.order(f"take {count}")["numbers"])

    def exit(self) -> None:
        """A normal exit (atexit runs); it must end within the timeout and without an error."""
        assert self.order("exit") == {"exiting": True}
        assert self.proc.wait(TIMEOUT) == 0, self.proc.stderr.read() if self.proc.stderr else ""

    def hard_exit(self) -> None:
        """os._exit(0): no atexit handler runs."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("hard-exit\n")
        self.proc.stdin.flush()
        assert self.proc.wait(TIMEOUT) == 0

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(TIMEOUT)


def take_in_process(name: str, count: int, **env: str) -> list[int]:
    """`count` numbers from a new process that then exits normally."""
    return list(run_scenario("take", name, count, timeout=TIMEOUT, **env)["numbers"])


@pytest.mark.parametrize("give_back", [True, False], ids=["on", "off"])
def test_a_restart_continues_where_a_clean_exit_stopped(give_back):
    Sequence.objects.create(name="s", step=1000)
    env = {} if give_back else OFF
    first = take_in_process("s", 27, **env)
    second = take_in_process("s", 3, **env)
    assert first == list(range(1, 28))
    assert second == ([28, 29, 30] if give_back else [1001, 1002, 1003])
    assert Sequence.objects.get(name="s").value == (30 if give_back else 2000)


@pytest.mark.parametrize("how", ["django-connection-closed", "autocommit-off"])
def test_a_clean_exit_gives_back_on_a_private_connection(how):
    """Without an open autocommit connection of Django's to carry it, the give-back goes through a private one."""
    Sequence.objects.create(name="s", step=1000)
    env = {"SEGMENT_SEQ_TEST_AUTOCOMMIT": "0"} if how == "autocommit-off" else {}
    worker = Worker("s", **env)
    got = worker.take(27)
    if how == "django-connection-closed":
        assert worker.order("close-django") == {"closed": True}
    worker.exit()
    got += take_in_process("s", 2, **env)
    assert got == list(range(1, 30))


def test_close_connections_gives_back_and_the_process_then_takes_a_fresh_block():
    """A process that skips interpreter cleanup (os._exit) gives back through close_connections(); numbers it
    takes afterwards come from a new allocation, so nothing given back is handed out twice."""
    Sequence.objects.create(name="s", step=1000)
    worker = Worker("s")
    before = worker.take(27)
    assert worker.order("close") == {"closed": True}
    after = worker.take(2)
    worker.hard_exit()
    restarted = take_in_process("s", 1)
    assert before == list(range(1, 28))
    assert after == [28, 29]  # a fresh block from the row given back: 28..1027 (without: the cached range)
    assert restarted == [1028]  # the os._exit left 30..1027 a gap (without a give-back: 1001)
    assert_unique(before + after + restarted)


@pytest.mark.parametrize("give_back", [True, False], ids=["on", "off"])
def test_a_management_command_finishing_gives_back(give_back):
    Sequence.objects.create(name="s", step=1000)
    env = worker_env(**({} if give_back else OFF))
    done = subprocess.run(
        [sys.executable, "-m", "django", "take_numbers", "s", "27"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["numbers"] == list(range(1, 28))
    assert take_in_process("s", 1, **({} if give_back else OFF)) == ([28] if give_back else [1001])


def test_interleaved_processes_give_back_only_what_nobody_took_since():
    """A takes, B takes, A exits (B allocated since: A's rest stays a gap), B exits (gives back), C continues."""
    Sequence.objects.create(name="s", step=1000)
    a, b = Worker("s"), Worker("s")
    got = a.take(5) + b.take(5)
    a.exit()
    got += b.take(3)
    b.exit()
    c = take_in_process("s", 3)
    assert got == [1, 2, 3, 4, 5, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008]
    assert c == [1009, 1010, 1011]  # without a give-back: 2001
    assert_unique(got + c)


def test_a_cycling_sequence_continues_across_the_wrap():
    """cycle=True: the rest of the block before the top goes back, and the next process wraps where it would have."""
    Sequence.objects.create(name="s", step=10, max_value=25, cycle=True)
    first = take_in_process("s", 24)
    second = take_in_process("s", 3)
    third = take_in_process("s", 2)
    assert first == list(range(1, 25))
    assert second == [25, 1, 2]
    assert third == [3, 4]
    assert Sequence.objects.get(name="s").value == 4


def test_an_exit_never_waits_long_for_a_row_held_elsewhere():
    """Another transaction holds the row (on SQLite, the file's write lock) at exit: the give-back waits at most
    about LOCK_TIMEOUT, gives up, and the rest stays a gap."""
    Sequence.objects.create(name="s", step=1000)
    worker = Worker("s", **settings_env(LOCK_TIMEOUT=1.0))
    assert worker.take(27) == list(range(1, 28))
    if ON_SQLITE:
        holder = start_holder("hold-sqlite-lock", connections["default"].settings_dict["NAME"], 30)
    else:
        holder = start_holder("hold-row", "s", 30)
    try:
        started = time.monotonic()
        worker.exit()
        took = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait(TIMEOUT)
    assert took < 6, f"the exit took {took:.1f} s"
    assert take_in_process("s", 1) == [1001]


def test_random_interleavings_never_repeat():
    """Processes start, take across small blocks, give back through close_connections(), exit, get killed, in a
    random order: every number handed out is distinct, and give-backs really happened."""
    Sequence.objects.create(name="s", step=10)
    rnd = random.Random(20261123)
    workers: list[Worker] = []
    got: list[int] = []
    exits = 0
    for _ in range(24):
        action = rnd.random()
        if not workers or (len(workers) < 3 and action < 0.2):
            workers.append(Worker("s"))
            continue
        worker = rnd.choice(workers)
        if action < 0.7:
            got += worker.take(rnd.randint(1, 25))
        elif action < 0.8:
            worker.order("close")
        elif action < 0.95:
            workers.remove(worker)
            worker.exit()
            exits += 1
        else:
            workers.remove(worker)
            worker.kill()
    for worker in workers:
        worker.exit()
    got += take_in_process("s", 33)
    assert_unique(got)
    assert exits >= 3
    # The last process gave its rest back: the row stands at the last number handed out.
    assert Sequence.objects.get(name="s").value == max(got)


def test_sigkill_leaves_the_gap():
    Sequence.objects.create(name="s", step=1000)
    worker = Worker("s")
    assert worker.take(27) == list(range(1, 28))
    worker.kill()
    assert take_in_process("s", 1) == [1001]


def test_a_fork_child_never_gives_back_its_parents_range():
    """The child exits normally without taking a number, then with numbers of its own block: the parent's
    range stays the parent's, and a new process never gets a number the parent still hands out."""
    Sequence.objects.create(name="s", step=1000)
    parent = Worker("s")
    got = parent.take(5)
    assert parent.order("fork 0") == {"numbers": []}
    assert parent._answer() == {"child_exit": 0}
    got += take_in_process("s", 3)  # the row was left at 1000: 1001..1003, then 1004.. given back
    assert parent.order("fork 4")["numbers"] == [1004, 1005, 1006, 1007]  # its own block, given back at exit
    assert parent._answer() == {"child_exit": 0}
    got += [1004, 1005, 1006, 1007]
    got += parent.take(10)
    got += take_in_process("s", 2)
    parent.exit()
    got += take_in_process("s", 2)
    assert got[:5] == [1, 2, 3, 4, 5]
    assert got[5:8] == [1001, 1002, 1003]
    assert got[12:22] == list(range(6, 16))  # the parent went on with its own range
    assert got[22:24] == [1008, 1009]
    assert_unique(got)


@pytest.mark.parametrize("give_back", [True, False], ids=["on", "off"])
def test_a_prefetched_block_goes_back_with_the_current_one(give_back):
    Sequence.objects.using(PREFETCH_ALIAS).create(name="s", step=100)
    env = prefetch_env(GIVE_BACK_UNUSED=give_back)
    worker = Worker("s", **env)
    got = worker.take(30)  # past 20% of the range: the next one is fetched in the background
    assert worker.order("wait") == {"background_fetches": 1}
    worker.exit()
    got += take_in_process("s", 1, **env)
    assert got == list(range(1, 31)) + ([31] if give_back else [201])


def test_a_prefetched_block_after_another_process_goes_back_alone():
    """A's current block, then B's, then A's prefetched one: only the prefetched one can go back, from its
    first number, since B holds the numbers between; A's current rest stays a gap."""
    Sequence.objects.using(PREFETCH_ALIAS).create(name="s", step=100)
    env = prefetch_env()
    a, b = Worker("s", **env), Worker("s", **env)
    got = a.take(1) + b.take(1)
    got += a.take(29)
    assert a.order("wait") == {"background_fetches": 1}
    a.exit()
    got += take_in_process("s", 2, **env)
    got += b.take(10)
    b.exit()
    assert got[:31] == [1, 101, *range(2, 31)]
    assert got[31:33] == [201, 202]  # A's prefetched 201..300 went back
    assert got[33:] == list(range(102, 112))  # B's block was never given away
    assert_unique(got)


@override_settings(SEGMENT_SEQ={"PREFETCH": False, "ADAPTIVE_STEP": False, "GIVE_BACK_UNUSED": True})
def test_in_process_close_connections_then_numbers_continue():
    """In this process: close_connections() gives the rest back and empties the cache; the next number is the
    first one given back, from a new allocation."""
    Sequence.objects.create(name="s", step=50)
    got = [next_value("s") for _ in range(7)]
    close_connections()
    assert Sequence.objects.get(name="s").value == 7
    got += [next_value("s") for _ in range(3)]
    assert got == list(range(1, 11))
    assert Sequence.objects.get(name="s").value == 57
    assert wait_for_prefetch(1)


@pytest.mark.skipif(ON_SQLITE, reason="a database server to lose")
def test_an_exit_with_the_database_gone_says_so_in_one_warning_line():
    """The server went away (its sessions ended, new ones refused) before a clean exit: the give-back fails with
    one warning line on stderr, no traceback, and the exit still succeeds."""
    from tests.support.cut_relay import CutRelay

    Sequence.objects.create(name="s", step=1000)
    database = connections["default"].settings_dict
    relay = CutRelay(database["HOST"] or "127.0.0.1", int(database["PORT"] or (5432 if ON_POSTGRES else 3306)))
    scheme, user = ("postgres", "postgres") if ON_POSTGRES else ("mysql", "root")
    url = {f"SEGMENT_SEQ_TEST_{settings.BACKEND.upper()}_URL": f"{scheme}://{user}@127.0.0.1:{relay.port}/test"}
    worker = Worker("s", **url)
    assert worker.take(5) == [1, 2, 3, 4, 5]
    relay.cut()
    assert worker.order("exit") == {"exiting": True}
    assert worker.proc.wait(TIMEOUT) == 0
    assert worker.proc.stderr is not None
    err = worker.proc.stderr.read()
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("Giving unused sequence numbers back on 'default' failed ("), err
    assert take_in_process("s", 1) == [1001]  # the rest stayed a gap
