"""Faults real deployments see, injected while real processes allocate; every number taken is checked for repeats."""

from __future__ import annotations

import collections
import contextlib
import os
import random
import time
import traceback
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import OperationalError, connection, connections, transaction
from django.db.models import F
from django.test import override_settings

from django_segment_seq import SequenceContention, SequenceUnavailable, next_value, next_values, sequence_stats
from django_segment_seq.allocator import loop as allocator
from django_segment_seq.allocator.connections import pool
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.stress.run import kill_sessions
from tests.testapp.models import Order

pytestmark = pytest.mark.django_db(transaction=True)

needs_server = pytest.mark.skipif(settings.BACKEND == "sqlite", reason="SQLite has no server sessions to kill")
# A fault that never lets the workers finish must fail the test, not hang it.
DEADLINE = 300


def kill_other_sessions() -> int:
    """End every session on the test database but this one, the way an operator or a failover does."""
    return kill_sessions(connection)


def stored_numbers() -> list[int]:
    return list(Order.objects.values_list("order_no", flat=True))


# 1. SIGKILL -------------------------------------------------------------------------------------------------------


def test_processes_killed_while_allocating_and_saving(stress_workers):
    """Step 3 keeps every process fetching ranges; kill one mid-flight eight times and start a replacement each time."""
    Sequence.objects.create(name="order", step=3)
    rng = random.Random(1)
    for _ in range(5):
        stress_workers.start(1500)
    killed = []
    for _ in range(8):
        victim = _busy_worker(stress_workers, rng)
        if victim is None:
            break
        time.sleep(rng.uniform(0.0, 0.2))
        victim.kill()
        killed.append(victim)
        stress_workers.start(300)  # the restarted process
    stress_workers.wait(killed=killed)
    assert len(killed) >= 4, "the workers finished before enough of them could be killed"
    assert_unique(stress_workers.numbers())
    assert_unique(stored_numbers())


def _busy_worker(workers, rng: random.Random):
    """A running worker that has already handed out numbers, so a kill lands in the middle of its work."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        busy = [
            proc
            for proc, out in zip(workers.procs, workers.outs, strict=True)
            if proc.poll() is None and out.exists() and out.stat().st_size > 0
        ]
        if busy:
            return rng.choice(busy)
        if not workers.running():
            return None
        time.sleep(0.02)
    raise AssertionError("no worker made progress")


# 2. Dropped connections -------------------------------------------------------------------------------------------


@needs_server
def test_dropped_private_connection_is_replaced_and_retried():
    """Inside a transaction ranges are taken on a private connection; one killed while idle is replaced."""
    Sequence.objects.create(name="k", step=5)
    with transaction.atomic():
        assert next_values("k", 5) == range(1, 6)  # the pool now holds an idle private connection
    assert kill_other_sessions() >= 1
    with transaction.atomic():
        assert next_value("k") == 6
    assert sequence_stats()[("default", "k")].failures == 1


@needs_server
def test_sessions_killed_again_and_again_while_processes_allocate(stress_workers):
    Sequence.objects.create(name="order", step=4)
    for _ in range(4):
        stress_workers.start(1500)
    killed = 0
    deadline = time.monotonic() + DEADLINE
    while stress_workers.running() and time.monotonic() < deadline:
        time.sleep(0.1)
        killed += kill_other_sessions()
    stress_workers.wait()
    assert killed > 0
    assert_unique(stress_workers.numbers())
    assert_unique(stored_numbers())


def test_unreachable_database_is_a_clear_error_after_the_retry_budget(monkeypatch, tmp_path):
    """Every attempt fails: SequenceUnavailable names the sequence, the alias and the attempts; nothing changes.

    The caller is inside a transaction, so the allocation needs a private connection, and every new
    one points at a closed port (or, on SQLite, a file that cannot be opened).
    """
    Sequence.objects.create(name="u", step=5)
    pool.close_all()
    settings_dict = connections.settings["default"]
    monkeypatch.setitem(settings_dict, "HOST", "127.0.0.1")
    monkeypatch.setitem(settings_dict, "PORT", _closed_port())
    if connection.vendor == "sqlite":
        monkeypatch.setitem(settings_dict, "NAME", str(tmp_path / "missing" / "db.sqlite3"))
    with (
        override_settings(SEGMENT_SEQ={"CONNECTION_RETRIES": 2, "MAX_BACKOFF": 0.01}),
        transaction.atomic(),
        pytest.raises(SequenceUnavailable, match=r"Sequence 'u': database 'default' failed 3 times in a row"),
    ):
        next_value("u")
    monkeypatch.undo()
    pool.close_all()
    assert Sequence.objects.get(name="u").value == 0
    assert next_value("u") == 1


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# 4. Admin edits ---------------------------------------------------------------------------------------------------


def test_admin_edits_of_step_limits_and_cycle_while_processes_allocate(stress_workers, client):
    """Each edit is submitted from a form loaded a moment earlier, so its value is already stale."""
    client.force_login(User.objects.create_superuser("admin", "admin@example.com", "pw"))
    row = Sequence.objects.create(name="order", step=10)
    url = f"/admin/django_segment_seq/sequence/{row.pk}/change/"
    rng = random.Random(4)
    for _ in range(4):
        stress_workers.start(1500)
    edits = 0
    deadline = time.monotonic() + DEADLINE
    while stress_workers.running() and time.monotonic() < deadline:
        shown = Sequence.objects.get(pk=row.pk)  # the form as the admin page showed it
        time.sleep(rng.uniform(0.01, 0.1))
        data = {
            "value": shown.value,
            "initial-value": shown.value,
            "step": rng.randint(1, 60),
            "min_value": shown.min_value,
            "max_value": shown.value + rng.randint(10**6, 10**9),
            "cycle": rng.choice(["on", ""]),
        }
        try:
            response = client.post(url, {k: v for k, v in data.items() if v != ""})
        except OperationalError:
            if connection.vendor != "sqlite":
                raise
            continue  # SQLite: the admin's transaction read first, and cannot then write while another does
        assert response.status_code == 302, response.context["adminform"].form.errors
        edits += 1
    stress_workers.wait()
    assert edits > 0
    assert_unique(stress_workers.numbers())
    assert_unique(stored_numbers())


# 5. Rollbacks -----------------------------------------------------------------------------------------------------


def test_caller_transactions_roll_back_at_random_while_others_allocate(stress_workers):
    """On SQLite a rolled-back transaction that had to allocate inside itself may give its block back (README)."""
    Sequence.objects.create(name="order", step=5)
    for i in range(4):
        stress_workers.start(600, *(["--rollback-rate", "0.5"] if i % 2 == 0 else []))
    stress_workers.wait()
    committed, rolled_back = stress_workers.numbers(), stress_workers.rolled_back()
    assert rolled_back
    assert_unique(committed)
    assert_unique(stored_numbers())
    if connection.vendor != "sqlite" or stress_workers.figures()["fetched_in_caller_transaction"] == 0:
        assert_unique(committed + rolled_back)


# 6. fork() --------------------------------------------------------------------------------------------------------


def test_fork_after_caching_again_and_again(tmp_path):
    """The parent caches and forks three times; each child caches, forks two grandchildren, and keeps allocating."""
    Sequence.objects.create(name="f", step=50)
    mine = [next_value("f") for _ in range(10)]
    children = []
    for _ in range(3):
        children.append(_fork(lambda: _family(tmp_path, fanout=2)))
        mine += [next_value("f") for _ in range(10)]
        mine += next_values("f", 3)
    for pid in children:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, _errors(tmp_path)
    theirs = [int(n) for path in tmp_path.glob("*.txt") for n in path.read_text().split()]
    assert len(theirs) == 3 * 3 * 47
    assert_unique(mine + theirs)


def _fork(body) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        body()
        code = 0
    except BaseException:  # noqa: BLE001 - reported to the parent through a file
        (Path(os.environ.get("TMPDIR", "/tmp")) / f"fork-error-{os.getpid()}.log").write_text(traceback.format_exc())
    finally:
        os._exit(code)


def _family(out_dir: Path, fanout: int) -> None:
    numbers = [next_value("f") for _ in range(20)]
    kids = [_fork(lambda: _family(out_dir, 0)) for _ in range(fanout)]
    numbers += [next_value("f") for _ in range(20)] + list(next_values("f", 7))
    (out_dir / f"{os.getpid()}.txt").write_text(" ".join(map(str, numbers)))
    for pid in kids:
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"grandchild {pid} failed")


def _errors(out_dir: Path) -> str:
    logs = Path(os.environ.get("TMPDIR", "/tmp")).glob("fork-error-*.log")
    return "\n".join(log.read_text() for log in logs)


# 7. Contention ----------------------------------------------------------------------------------------------------


def test_step_one_with_eight_processes_starves_none(stress_workers):
    """Every range is one number, so nearly every fetch races; each process must still get all it asked for."""
    Sequence.objects.create(name="order", step=1)
    for _ in range(8):
        stress_workers.start(150, "--max-batch", "3")
    stress_workers.wait()  # a worker exits non-zero on SequenceContention
    numbers = assert_unique(stress_workers.numbers())
    assert len(numbers) >= 8 * 150
    assert_unique(stored_numbers())


@override_settings(SEGMENT_SEQ={"MAX_RETRIES": 5, "MAX_BACKOFF": 0.001})
@pytest.mark.skipif(
    settings.BACKEND == "sqlite",
    reason="on SQLite an allocation holds the write lock from its read to its compare-and-set: no rival fits between",
)
def test_exhausted_retries_are_a_clear_error_and_take_nothing(monkeypatch):
    """A rival moves the row between every read and compare-and-set."""
    Sequence.objects.create(name="c", step=1)
    read_row = allocator.read_row

    def read_then_lose(cursor, select_row: str, name: str):
        row = read_row(cursor, select_row, name)
        Sequence.objects.filter(name=name).update(value=F("value") + 1)
        return row

    monkeypatch.setattr(allocator, "read_row", read_then_lose)
    with pytest.raises(SequenceContention, match=r"Sequence 'c': gave up after 6 conflicting compare-and-set attempts"):
        next_value("c")
    assert Sequence.objects.get(name="c").value == 6  # the rival's six moves, none of ours


# 9. Wrap-around ---------------------------------------------------------------------------------------------------


def test_cycle_under_concurrency_repeats_only_across_cycles(stress_workers):
    """20 aligned blocks of 10 per cycle; 4 processes use 15 blocks each: exactly 3 cycles, each number 3 times.

    A block handed out twice within one cycle would leave another number seen fewer than 3 times.
    Prefetch and the adaptive step are off: the exact count needs every block to be one step, used up.
    """
    Sequence.objects.create(name="loop", step=10, min_value=1, max_value=200, cycle=True)
    for _ in range(4):
        stress_workers.start(150, "--name", "loop", "--ops", "value", SEGMENT_SEQ_TEST_PREFETCH="")
    stress_workers.wait()
    counts = collections.Counter(stress_workers.numbers())
    assert counts == {n: 3 for n in range(1, 201)}


@needs_server
def test_many_idle_connections_dropped_at_once_cost_one_retry():
    """A threaded process keeps one idle private connection per thread; a restart or failover kills them all."""
    Sequence.objects.create(name="k", step=5)
    with contextlib.ExitStack() as stack:
        for _ in range(8):
            stack.enter_context(pool.borrow("default")).ensure_connection()
    assert kill_other_sessions() >= 8
    with transaction.atomic():  # a private connection is needed
        assert next_value("k") == 1
    assert sequence_stats()[("default", "k")].failures == 1


def test_a_failed_connection_is_not_kept_as_borrowed():
    """A connection dropped after a database error is forgotten entirely, not left in the pool's books."""
    from django.db import OperationalError

    from django_segment_seq.allocator.connections import pool

    with pytest.raises(OperationalError), pool.borrow("default"):
        raise OperationalError("lost")
    assert not pool._borrowed
