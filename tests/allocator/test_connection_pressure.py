"""The server refuses the allocator's private connections (too many connections): the caller's own one still serves.

Reproduced without exhausting the shared server: each caller process logs in as a login made for the test
with a limit of one connection (PostgreSQL CONNECTION LIMIT 1, MariaDB MAX_USER_CONNECTIONS 1), and its
Django connection, opened first and kept in autocommit as a web worker's is, takes that one. Every private
connection the allocator tries is then refused by the server, as a server at max_connections refuses it.
A caller in autocommit outside any transaction can carry the allocation on its own connection, so it must
get its numbers, whatever else the allocation wanted a private connection for (a prefetch, creating a row on
first use, the day's or the scope's row of a formatted or scoped field). A caller inside atomic() that does
not hold the row cannot: it must get SequenceUnavailable, one of the app's named errors, never a raw one.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.bound_scenarios import Scenario
from tests.testapp.models import Company, CompanyOrder, DailyOrder

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.processes,
    pytest.mark.skipif(
        settings.BACKEND == "sqlite", reason="SQLite refuses no connections (no server, no connection limit)"
    ),
]

UNAVAILABLE = "django_segment_seq.exceptions.SequenceUnavailable"
# Prefetch and the adaptive step on, and rows created on first use with a small step: many fetches per caller.
CALLER_ENV = {"SEGMENT_SEQ_TEST_PREFETCH": "1", "SEGMENT_SEQ_TEST_SETTINGS": json.dumps({"DEFAULT_STEP": 3})}
CASES = ["existing", "first-use", "formatted-save", "scoped-save"]
_logins = itertools.count()


def _create_login(name: str) -> None:
    """A login for the test database that the server lets hold one connection at a time."""
    database = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            role = connection.ops.quote_name(name)
            cursor.execute(f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 1")
            cursor.execute(f"GRANT CONNECT ON DATABASE {connection.ops.quote_name(database)} TO {role}")
            cursor.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
            cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
            cursor.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {role}")
        else:
            cursor.execute(f"CREATE USER '{name}'@'%' WITH MAX_USER_CONNECTIONS 1")
            cursor.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{database}`.* TO '{name}'@'%'")


def _drop_login(name: str) -> None:
    """End the login's sessions (the test's own processes opened them) and drop it with its grants."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [name])
            if cursor.fetchone() is None:
                return  # never created
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", [name])
            role = connection.ops.quote_name(name)
            cursor.execute(f"DROP OWNED BY {role}")
            cursor.execute(f"DROP ROLE {role}")
        else:
            cursor.execute("SELECT id FROM information_schema.processlist WHERE user = %s", [name])
            for (session,) in cursor.fetchall():
                cursor.execute(f"KILL CONNECTION {int(session)}")
            cursor.execute(f"DROP USER IF EXISTS '{name}'@'%'")


def _url(name: str) -> str:
    db = connection.settings_dict
    scheme = "postgres" if connection.vendor == "postgresql" else "mysql"
    port = db.get("PORT") or (5432 if scheme == "postgres" else 3306)
    return f"{scheme}://{name}@{db.get('HOST') or '127.0.0.1'}:{port}/{db['NAME']}"


@pytest.fixture
def limited_logins(transactional_db) -> Iterator[Callable[[int], list[dict[str, str]]]]:
    """Make `count` logins of one connection each; the environment of a caller process for each. Dropped after."""
    made: list[str] = []

    def make(count: int) -> list[dict[str, str]]:
        envs = []
        for _ in range(count):
            name = f"seqlim_{os.getpid()}_{next(_logins)}"
            made.append(name)
            _create_login(name)
            envs.append({f"SEGMENT_SEQ_TEST_{settings.BACKEND.upper()}_URL": _url(name), **CALLER_ENV})
        return envs

    yield make
    for name in made:
        _drop_login(name)


def _prepare(case: str) -> None:
    if case == "existing":
        Sequence.objects.create(name="pressed", step=3)
    elif case == "scoped-save":
        Company.objects.create(code="acme")


def _run(context: str, case: str, count: int, envs: list[dict[str, str]]) -> list[dict[str, Any]]:
    """One caller process per environment, all at once; each one's report."""
    callers = [Scenario("refused-connections", context, case, count, "acme", **env) for env in envs]
    try:
        reports = [caller.read(120) for caller in callers]
        for caller in callers:
            assert caller.wait(60) == 0, caller.stderr()
    finally:
        for caller in callers:
            caller.kill()
    for report in reports:
        # The reproduction: the login really could not open a second connection beside Django's.
        assert report["second_connection_refused"], f"the server let login {report['user']} open a second connection"
    return reports


def shown(outcome: dict[str, Any]) -> str:
    if outcome.get("error_type"):
        return f"raised {outcome['error_type']}: {outcome['error']}"
    return f"returned {outcome.get('value')!r}"


def _check_stored(case: str) -> None:
    if case == "formatted-save":
        assert_unique(DailyOrder.objects.values_list("order_no", flat=True))
    elif case == "scoped-save":
        assert_unique(CompanyOrder.objects.values_list("number", flat=True))


@pytest.mark.parametrize("case", CASES)
def test_refused_private_connection_leaves_the_allocation_to_the_callers_autocommit_connection(case, limited_logins):
    """Two processes at once, each holding its only connection in autocommit, take 20 numbers each.

    existing: next_value() of an existing row (step 3: prefetches, each on a private connection);
    first-use: next_value() of a sequence created on first use; formatted-save: DailyOrder saves, the day's
    row created on first use; scoped-save: CompanyOrder saves, the scope's row created on first use.
    """
    _prepare(case)
    reports = _run("autocommit", case, 20, limited_logins(2))

    problems = [
        f"process {i + 1}, call {j + 1} {shown(outcome)}; expected a number, taken on the caller's own connection"
        for i, report in enumerate(reports)
        for j, outcome in enumerate(report["outcomes"])
        if outcome["error_type"]
    ]
    taken = [o["value"] for report in reports for o in report["outcomes"] if o["value"] is not None]
    assert_unique(taken)
    _check_stored(case)
    assert not problems, "\n".join(problems)
    assert len(taken) == 40


@pytest.mark.parametrize("case", CASES)
def test_refused_private_connection_inside_atomic_is_a_named_error(case, limited_logins):
    """A process holding its only connection takes numbers twice, each time inside an atomic() block of its own.

    The block holds no Sequence row, so the allocation needs a private connection, which is refused: the
    caller must see SequenceUnavailable (or a number), never a raw OperationalError.
    """
    _prepare(case)
    (report,) = _run("atomic", case, 2, limited_logins(1))

    problems = [
        f"call {j + 1} inside atomic() {shown(outcome)}; expected SequenceUnavailable (or a number)"
        for j, outcome in enumerate(report["outcomes"])
        if outcome.get("error_type") not in (None, UNAVAILABLE) or "atomic_exit_error" in outcome
    ]
    taken = [o["value"] for o in report["outcomes"] if o.get("value") is not None]
    if case in ("existing", "first-use"):
        name = "pressed" if case == "existing" else "first-use"
        taken += [next_value(name) for _ in range(3)]  # the server lets connections in again: numbers continue
    assert_unique(taken)
    _check_stored(case)
    assert not problems, "\n".join(problems)
