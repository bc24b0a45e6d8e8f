"""The Sequence table locked as a whole by another session: every wait is still bounded by LOCK_TIMEOUT.

What an ALTER TABLE, a VACUUM FULL or a FLUSH TABLES WITH READ LOCK does to the table is played here by a
holder process: PostgreSQL's LOCK TABLE ... IN ACCESS EXCLUSIVE MODE, MariaDB's LOCK TABLES ... WRITE,
held for HOLD seconds. Row lock timeouts (PostgreSQL's lock_timeout on the allocator's own connections,
InnoDB's innodb_lock_wait_timeout) do not cover such waits on the caller's connection, and MariaDB's
lock_wait_timeout for metadata locks defaults to a day. The caller is a process of its own, started and
warmed up before the lock is taken, its Django connection open in autocommit and no range cached for the
sequence, so what it is asked to do must go to the database while the table is locked. It must end within
LOCK_TIMEOUT plus a margin, with SequenceUnavailable where a number was asked for; once the lock is gone,
numbers continue without repeats, in that process and in others.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.conf import settings

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.bound_scenarios import Scenario, TableLockHolder, is_named_error
from tests.testapp.models import Company, CompanyOrder, DailyOrder

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.processes,
    pytest.mark.skipif(
        settings.BACKEND == "sqlite",
        reason="SQLite has no table locks apart from its one write lock, which the connection's busy timeout "
        "bounds (tests/processes/test_bounded_waits.py, tests/test_sqlite_*)",
    ),
]

LOCK_TIMEOUT = 1.0
# How long any one call may take while the table is locked: the bound, plus room for a connection and a retry.
BOUND = LOCK_TIMEOUT + 1.5
# How long the holder keeps the table locked: long enough that waiting it out is plainly not the bound.
HOLD = 12.0
CALLER_ENV = {"SEGMENT_SEQ_TEST_SETTINGS": json.dumps({"LOCK_TIMEOUT": LOCK_TIMEOUT})}
UNAVAILABLE = "django_segment_seq.exceptions.SequenceUnavailable"


def shown(outcome: dict[str, Any]) -> str:
    if outcome.get("error_type"):
        return f"raised {outcome['error_type']}: {outcome['error']} after {outcome['elapsed']} s"
    return f"returned {outcome.get('value')!r} after {outcome.get('elapsed')} s"


def run_under_lock(context: str, what: str, name: str) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """Warm a caller up, lock the table, have the caller do `what`, release; (warm-up, outcome, three later tries)."""
    with Scenario("under-table-lock", context, what, name, **CALLER_ENV) as caller:
        ready = caller.read(60)
        assert ready["warm_up"]["error_type"] is None, f"warm-up before the lock failed: {ready['warm_up']}"
        with TableLockHolder(HOLD) as holder:
            outcome = caller.ask("go", HOLD + 30)
            holder.release()
        later = caller.ask("after", 60)["after"]
        caller.send("exit")
        assert caller.wait(30) == 0, caller.stderr()
    return ready["warm_up"], outcome, later


def later_problems(later: list[dict[str, Any]]) -> list[str]:
    return [f"after the lock was released, try {i + 1} {shown(o)}" for i, o in enumerate(later) if o["error_type"]]


SETUPS = {
    # (action in the scenario, what the test creates first)
    "existing-row": "value",
    "first-use": "value",
    "formatted-save": "formatted-save",
    "scoped-save": "scoped-save",
}


@pytest.mark.parametrize("context", ["autocommit", "atomic"])
@pytest.mark.parametrize("case", list(SETUPS))
def test_a_locked_table_costs_next_value_at_most_lock_timeout(case, context):
    """next_value() (directly, or through a formatted or scoped field's save) while the table is locked.

    existing-row: the row exists; first-use: it is created on first use; formatted-save: a DailyOrder, whose
    day's row is created on this save; scoped-save: a CompanyOrder whose scope's row exists, step 1, so the
    save needs a new block. In autocommit the block would be taken on the caller's connection, in atomic() on a
    private one (after which the caller's transaction is asked whether it holds the row).
    """
    name = "locked"
    if case == "existing-row":
        Sequence.objects.create(name=name, step=10)
    elif case == "scoped-save":
        name = "acme"
        Company.objects.create(code=name)
        Sequence.objects.create(name="company-order", step=1)
    warm_up, outcome, later = run_under_lock(context, SETUPS[case], name)

    problems = []
    if outcome["error_type"] != UNAVAILABLE or outcome["elapsed"] > BOUND:
        problems.append(
            f"while the table was locked ({HOLD} s), the call {shown(outcome)}; expected SequenceUnavailable "
            f"within {BOUND} s (LOCK_TIMEOUT {LOCK_TIMEOUT} s)"
        )
    problems += later_problems(later)
    taken = ([warm_up["value"]] if warm_up["value"] is not None else []) + [
        o["value"] for o in [outcome, *later] if o["value"] is not None
    ]
    if case == "formatted-save":
        taken += [DailyOrder.objects.create().order_no for _ in range(3)]
        assert_unique(DailyOrder.objects.values_list("order_no", flat=True))
    elif case == "scoped-save":
        company = Company.objects.get(code=name)
        taken += [CompanyOrder.objects.create(company=company).number for _ in range(3)]
        assert_unique(CompanyOrder.objects.values_list("number", flat=True))
    else:
        taken += [next_value(name) for _ in range(3)]
    assert_unique(taken)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("how", ["close-connections", "exit"])
def test_a_locked_table_costs_a_give_back_at_most_lock_timeout(how):
    """A process with unused cached numbers gives them back (close_connections(), or its atexit hook).

    The give-back is a compare-and-set on the locked table: it must give up within the bound (the numbers
    then stay a gap), never keep the caller, or the exiting process, waiting for the lock.
    """
    Sequence.objects.create(name="locked", step=10)
    what = "give-back-close" if how == "close-connections" else "give-back-exit"
    with Scenario("under-table-lock", "autocommit", what, "locked", **CALLER_ENV) as caller:
        ready = caller.read(60)
        warm_up = ready["warm_up"]
        assert warm_up["value"] == [1, 2, 3], warm_up
        with TableLockHolder(HOLD) as holder:
            if how == "exit":
                caller.send("go")
                caller.read(30)  # {"exiting": true}: from here on the process only runs its exit
                started = time.monotonic()
                code = caller.wait(HOLD + 30)
                outcome = {"value": code, "error_type": None, "elapsed": round(time.monotonic() - started, 3)}
            else:
                outcome = caller.ask("go", HOLD + 30)
            holder.release()
        later = []
        if how == "close-connections":
            later = caller.ask("after", 60)["after"]
            caller.send("exit")
            assert caller.wait(30) == 0, caller.stderr()

    problems = []
    if outcome["error_type"] is not None or outcome["elapsed"] > BOUND:
        action = "the process's exit" if how == "exit" else "close_connections()"
        problems.append(
            f"while the table was locked ({HOLD} s), {action} {shown(outcome)}; expected it done within "
            f"{BOUND} s (LOCK_TIMEOUT {LOCK_TIMEOUT} s), the numbers left a gap"
        )
    problems += later_problems(later)
    taken = warm_up["value"] + [o["value"] for o in later if o["value"] is not None]
    taken += [next_value("locked") for _ in range(3)]
    assert_unique(taken)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("subcommand", ["list", "show", "set"])
def test_a_locked_table_costs_the_segment_seq_command_at_most_lock_timeout(subcommand):
    """manage.py segment_seq list / show NAME / set NAME --step 7 while the table is locked.

    It cannot do its work then: it must say so with an error of its own (CommandError, or one of the app's
    named errors) within the bound, not sit waiting for the lock, and not surface a raw database error.
    """
    Sequence.objects.create(name="locked", step=10)
    _warm_up, outcome, later = run_under_lock("autocommit", f"command-{subcommand}", "locked")

    named = outcome["error_type"] == "django.core.management.base.CommandError" or is_named_error(outcome["error_type"])
    problems = []
    if not named or outcome["elapsed"] > BOUND:
        problems.append(
            f"while the table was locked ({HOLD} s), segment_seq {subcommand} {shown(outcome)}; expected a "
            f"CommandError or one of the app's named errors within {BOUND} s (LOCK_TIMEOUT {LOCK_TIMEOUT} s)"
        )
    problems += later_problems(later)
    taken = [o["value"] for o in later if o["value"] is not None] + [next_value("locked") for _ in range(3)]
    assert_unique(taken)
    assert not problems, "\n".join(problems)
