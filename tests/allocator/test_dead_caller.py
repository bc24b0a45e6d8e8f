"""The caller's own session ended under it (failover, server restart, an operator's kill): never a raw database error.

A process opens its Django connection, then another connection of its ends that session
(PostgreSQL pg_terminate_backend, MariaDB KILL CONNECTION). Its driver may not know yet (the session is
found dead at the next statement), or know it (the caller's own query failed first, and was caught): a
psycopg connection then reports an unknown transaction state. Meanwhile another session holds the
sequence row with SELECT ... FOR UPDATE, so the allocation cannot simply succeed on a fresh connection and
goes through the allocator's checks of the caller's transaction. Every next_value() call must return a
number or raise SequenceUnavailable, within a bounded wait, never a raw OperationalError or InterfaceError.
Inside atomic() the caller's transaction is gone with its session: what leaving the block raises is
Django's business, and is not judged here. Each caller is a process of its own, run with timeouts.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf import settings

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.bound_scenarios import Scenario
from tests.support.scenarios import start_holder

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.processes,
    pytest.mark.skipif(settings.BACKEND == "sqlite", reason="SQLite has no server sessions to end"),
]

LOCK_TIMEOUT = 1.0
# A wait is bounded when it ends within the lock timeout plus room for a few reconnects and back-offs.
BOUND = LOCK_TIMEOUT + 3.0
UNAVAILABLE = "django_segment_seq.exceptions.SequenceUnavailable"
CALLER_ENV = {"SEGMENT_SEQ_TEST_SETTINGS": json.dumps({"LOCK_TIMEOUT": LOCK_TIMEOUT})}


def shown(outcome: dict[str, Any]) -> str:
    if outcome.get("error_type"):
        return f"raised {outcome['error_type']}: {outcome['error']} after {outcome['elapsed']} s"
    return f"returned {outcome.get('value')!r} after {outcome.get('elapsed')} s"


@pytest.mark.parametrize("noticed", ["unnoticed", "noticed"])
@pytest.mark.parametrize("context", ["autocommit", "atomic"])
def test_next_value_on_a_killed_caller_session_is_a_number_or_a_named_error(context, noticed):
    """Two next_value() calls after the caller's session was ended, the row held by another session."""
    Sequence.objects.create(name="busy", step=10)
    holder = start_holder("hold-row", "busy", 60)
    try:
        with Scenario("dead-caller", context, noticed, "busy", **CALLER_ENV) as caller:
            report = caller.read(90)
            assert caller.wait(30) == 0, caller.stderr()
    finally:
        holder.kill()
        holder.wait()

    if noticed == "noticed":
        # The reproduction: the caller's own query on the dead session failed, so its driver knows.
        assert report["own_query"]["error_type"], f"the caller's own query worked on an ended session: {report}"
    problems = []
    for i, outcome in enumerate(report["attempts"]):
        if outcome["error_type"] not in (None, UNAVAILABLE) or outcome["elapsed"] > BOUND:
            problems.append(
                f"next_value() call {i + 1} after the caller's session was ended {shown(outcome)}; expected a "
                f"number or SequenceUnavailable within {BOUND} s (LOCK_TIMEOUT {LOCK_TIMEOUT} s)"
            )
    taken = [o["value"] for o in report["attempts"] if o["value"] is not None]
    taken += [next_value("busy") for _ in range(3)]  # the row free again: numbers continue
    assert_unique(taken)
    assert not problems, "\n".join(problems)
