"""The allocator's database sessions: idle ones are closed, none is opened when Django's own will do,
fork children leave the parent's alone."""

import json

import pytest
from django.conf import settings

from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.scenarios import run_scenario

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(settings.BACKEND == "sqlite", reason="server sessions (SQLite has none)"),
]


@pytest.mark.processes
def test_private_connections_are_closed_after_connection_max_idle():
    """After taking numbers (prefetch on) and idling past CONNECTION_MAX_IDLE, only Django's own session is left."""
    Sequence.objects.create(name="s", step=5)
    result = run_scenario(
        "idle-connections",
        "s",
        2.0,
        SEGMENT_SEQ_TEST_PREFETCH="1",
        SEGMENT_SEQ_TEST_SETTINGS=json.dumps({"CONNECTION_MAX_IDLE": 0.5}),
    )
    assert result["before"] == 1  # Django's connection
    assert result["after_idle"] - 1 == 0, f"sessions beyond Django's own after idling: {result}"
    assert_unique(result["numbers"], 80)


@pytest.mark.processes
def test_no_second_session_when_djangos_connection_is_in_autocommit():
    """Outside a transaction, in autocommit, Django's own connection commits a range on its own (prefetch off)."""
    Sequence.objects.create(name="s", step=5)
    result = run_scenario("sessions-while-taking", "s")
    assert not result["in_atomic_block"]
    assert set(result["counts"]) == {1}, f"sessions of the process while taking numbers: {result['counts']}"
    assert_unique(result["numbers"], 12 + 25)


@pytest.mark.skipif(
    settings.BACKEND != "mariadb",
    reason="MariaDB: mysqlclient sends COM_QUIT when a child's inherited connection is finalized at exit",
)
@pytest.mark.processes
def test_fork_childs_normal_exit_leaves_the_parents_session_alone(tmp_path):
    """A child that exits normally must not end the session it inherited from its parent.

    MariaDB: COM_QUIT on the shared socket.
    """
    Sequence.objects.create(name="f", step=5)
    result = run_scenario("fork-children", "f", tmp_path)
    theirs = [int(n) for path in sorted(tmp_path.glob("child*.txt")) for n in path.read_text().split()]
    assert len(theirs) == 3 * 7
    assert_unique(result["numbers"] + theirs)
    assert result["failures"] == 0, (
        f"the parent's allocations failed {result['failures']} times after its children exited"
    )
