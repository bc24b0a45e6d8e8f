"""bounded_when_used(): LOCK_TIMEOUT for a block's statements on a connection the app shares with its caller, set
before the first statement and put back after; a block that sends none changes nothing."""

import pytest
from django.conf import settings
from django.db import connection

from django_segment_seq.db.bounded import bounded_when_used
from django_segment_seq.models import Sequence

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(settings.BACKEND == "sqlite", reason="SQLite has no lock timeout of its session"),
]

# The session's lock waits, as each server names them, and what LOCK_TIMEOUT 0.5 s sets them to.
READ = {"postgres": "SELECT current_setting('lock_timeout')", "mariadb": "SELECT @@SESSION.innodb_lock_wait_timeout"}
BOUND = {"postgres": "500ms", "mariadb": 1}


def session_wait() -> object:
    with connection.cursor() as cursor:
        cursor.cursor.execute(READ[settings.BACKEND])  # the driver's cursor: past the block's execute wrapper
        return cursor.cursor.fetchone()[0]


@pytest.fixture
def own_value():
    """The caller's own session value, not the bound, so a restore that failed would show."""
    own = {"postgres": "7s", "mariadb": 7}[settings.BACKEND]
    setter = {"postgres": "SET lock_timeout = '7s'", "mariadb": "SET SESSION innodb_lock_wait_timeout = 7"}
    with connection.cursor() as cursor:
        cursor.execute(setter[settings.BACKEND])
    yield own
    connection.close()


def test_the_bound_holds_from_the_first_statement_and_the_callers_value_comes_back(own_value, settings):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.5}
    with bounded_when_used(["default"]):
        assert session_wait() == own_value  # nothing sent yet through Django: nothing set
        list(Sequence.objects.all())
        assert session_wait() == BOUND[settings.BACKEND]
    assert session_wait() == own_value


def test_a_block_that_sends_nothing_changes_nothing(own_value):
    with bounded_when_used(["default"]):
        pass
    assert session_wait() == own_value


def test_a_session_closed_inside_the_block_is_not_opened_again_to_put_the_value_back(own_value):
    with bounded_when_used(["default"]):
        list(Sequence.objects.all())
        connection.close()
    assert connection.connection is None


def test_a_block_inside_another_leaves_the_bound_to_the_outer_one(own_value, settings):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.5}
    with bounded_when_used(["default"]):
        with bounded_when_used(["default"]):
            assert len(connection.execute_wrappers) == 1  # one bound, set once
            list(Sequence.objects.all())
        assert session_wait() == BOUND[settings.BACKEND]  # still the outer block's
    assert session_wait() == own_value


def in_a_thread_of_its_own(work):
    """`work()` in a new thread, whose connections are not built yet (as each request's under an ASGI server)."""
    import threading

    from django.db import connections

    found = []

    def run() -> None:
        try:
            found.append(work())
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert found, "the work failed: see the thread's exception above"
    return found[0]


def test_a_connection_not_built_yet_is_not_built_for_a_block_that_sends_nothing():
    from django.db import connections

    def work() -> list[str]:
        with bounded_when_used(["default"]):
            pass
        return [each.alias for each in connections.all(initialized_only=True)]

    assert in_a_thread_of_its_own(work) == []  # before: ["default"], built for every request's checks


def test_a_connection_opened_inside_the_block_is_bounded_and_its_value_comes_back(settings):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.5}

    def work() -> tuple[object, object, object]:
        fresh = session_wait()  # a new session's own value
        connection.close()
        with bounded_when_used(["default"]), bounded_when_used(["default"]):  # opened in the inner block
            list(Sequence.objects.all())
            inner = session_wait()
            list(Sequence.objects.all())
        return fresh, inner, session_wait()

    fresh, inner, after = in_a_thread_of_its_own(work)
    assert inner == BOUND[settings.BACKEND] and after == fresh != inner
