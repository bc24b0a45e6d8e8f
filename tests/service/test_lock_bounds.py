"""Every statement of the service waits at most LOCK_TIMEOUT for another session's lock, on Django's views and the
fast path alike: a request is answered 503 (or let through, for a rate's count and the usage write, its counts
kept), never held as long as the lock. Also run by the psycopg2 cell: the bound is sent on the driver's own cursor."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from django.db import connections, transaction
from django.test import Client as HttpClient

from django_segment_seq.models import Sequence
from django_segment_seq.service.models import Client
from tests.service.test_trust import PATHS, add_client, post
from tests.support.fast_client import FastClient

pytestmark = pytest.mark.django_db(transaction=True)


HEALTH = {"/ids/": "/ids/health", "/aids/": "/aids/health", "fast": "/ids/health"}


@contextlib.contextmanager
def held_elsewhere(lock: Callable[[], contextlib.AbstractContextManager[None]]) -> Iterator[None]:
    """What `lock` takes, held on another thread's session while the block runs."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with lock():
                holding.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        yield
    finally:
        release.set()
        holder.join(30)


@contextlib.contextmanager
def whole_table(table: str) -> Iterator[None]:
    """A table locked by this thread's session, reads of it included (LOCK TABLE, LOCK TABLES ... WRITE)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with transaction.atomic():
                cursor.execute(f'LOCK TABLE "{table}" IN ACCESS EXCLUSIVE MODE')
                yield
        else:
            cursor.execute(f"LOCK TABLES `{table}` WRITE")
            try:
                yield
            finally:
                cursor.execute("UNLOCK TABLES")


@contextlib.contextmanager
def every_row(model: type) -> Iterator[None]:
    """Every row of `model` held by this thread's session (SELECT ... FOR UPDATE)."""
    with transaction.atomic():
        list(model.objects.select_for_update())
        yield


def table_locked(model: type) -> contextlib.AbstractContextManager[None]:
    """`model`'s whole table locked by another session while the block runs."""
    from django.db import connection as ours

    assert ours.vendor != "sqlite"
    return held_elsewhere(lambda: whole_table(model._meta.db_table))


def rows_held(model: type) -> contextlib.AbstractContextManager[None]:
    """Every row of `model` held by another session (SELECT ... FOR UPDATE) while the block runs."""
    return held_elsewhere(lambda: every_row(model))


@pytest.mark.parametrize("prefix", PATHS)
def test_a_table_locked_elsewhere_is_a_503_within_the_lock_timeout(prefix, settings, backend):
    """A token not in memory is read from the client table, and the health check reads the sequence table: each
    waited for another session's table lock as long as it was held; now each answers 503 within LOCK_TIMEOUT."""
    from django_segment_seq.service.authentication import known

    if backend == "sqlite":
        pytest.skip("a table held by another session, on a server with table locks")
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.5}
    token = add_client()
    assert post(prefix, "order/next", token).status_code == 200
    known.forget()  # as in another process, or KNOWN_FOR later: the token is read from the table again
    with table_locked(Client):
        started = time.monotonic()
        status, took = post(prefix, "order/next", token).status_code, time.monotonic() - started
    assert (status, took < 0.5 + 1.0) == (503, True), took
    with table_locked(Sequence):
        started = time.monotonic()
        response = (FastClient() if prefix == "fast" else HttpClient()).get(HEALTH[prefix])
        took = time.monotonic() - started
    assert (response.status_code, took < 0.5 + 1.0) == (503, True), took
    assert post(prefix, "order/next", token).status_code == 200  # the tables free: as before


@pytest.mark.parametrize("prefix", PATHS)
def test_a_client_row_held_elsewhere_delays_a_request_at_most_the_lock_timeout(prefix, monkeypatch, settings, backend):
    """The usage write a request makes due (on Django's view, in the request itself) waited for a client's row held
    by another session as long as it was held; now it fails within LOCK_TIMEOUT, and its counts are kept."""
    from django_segment_seq.service import tallies
    from django_segment_seq.service.kept_thread import usage_thread

    if backend == "sqlite":
        pytest.skip("a row held by another session, on a server with row locks")
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.5}
    monkeypatch.setattr(tallies, "FLUSH_EVERY", 0)  # a write due at every request
    token = add_client()
    assert post(prefix, "order/next", token).status_code == 200  # the token known, the range cached
    usage_thread.wait()
    tallies.usage.flush()
    with rows_held(Client):
        answers = timed_answers(prefix, token)
    assert [status for status, _ in answers] == [200, 200, 200]
    assert all(took < 0.5 + 1.0 for _, took in answers), answers
    usage_thread.wait()
    tallies.usage.flush()  # the row free again: the counts kept meanwhile are written
    assert Client.objects.get(name="partner").requests == 4


def test_admission_on_the_event_loop_builds_no_connection_per_request(monkeypatch):
    """admit() on the loop (a known caller, a request not remembered) sends no statement, so it sets up no bound:
    naming a connection there built a DatabaseWrapper for each request's task (30 of 30 requests before)."""
    token = add_client()
    assert post("fast", "order/next", token).status_code == 200  # the token known, the range cached
    built = []
    create = connections.create_connection

    def counted(alias: str):
        built.append(alias)
        return create(alias)

    monkeypatch.setattr(connections, "create_connection", counted)
    statuses = [post("fast", "order/next", token, {"count": count}).status_code for count in range(1, 31)]
    assert statuses == [200] * 30
    assert len(built) <= 5, built  # before: 30; a request sent to a thread (a usage write due) builds its own


def timed_answers(prefix: str, token: str) -> list[tuple[int, float]]:
    """Three requests' statuses, each with the seconds it took."""
    answers = []
    for _ in range(3):
        started = time.monotonic()
        answers.append((post(prefix, "order/next", token).status_code, time.monotonic() - started))
    return answers


@pytest.mark.parametrize("prefix", ["/ids/", "/aids/"])
@pytest.mark.parametrize("case", ["window's first count", "failed authentication", "address past its failures"])
def test_a_held_rate_window_delays_djangos_views_at_most_the_lock_timeout(prefix, case, settings, tmp_path, backend):
    """On a cache that culls, Django's own views count in RateWindow besides a lease of a client's rate: a window's
    first count (its row made, ended rows deleted), a wrong token's failure, the check of an address past its
    failures. With every row held by another session, each of their statements waits at most LOCK_TIMEOUT, as the
    fast path's do (a count that does not come lets its request through)."""
    from django_segment_seq.service.models import RateWindow

    if backend == "sqlite":
        pytest.skip("a row held by another session, on a server with row locks")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                   "LOCATION": str(tmp_path / "cache")}}  # fmt: skip
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.5, "SERVICE_AUTH_FAILURE_RATE": "2/m"}
    first = case == "window's first count"
    token = add_client("held", "order*", "--rate", "100000/s" if first else "100000/h")
    wrong = "ssq_" + "Z" * 43
    assert post(prefix, "order/next", token).status_code == 200  # the rate's row made
    expected = {"window's first count": 200, "failed authentication": 401, "address past its failures": 429}[case]
    before = {"window's first count": [], "failed authentication": [401], "address past its failures": [401, 401, 429]}
    assert [post(prefix, "order/next", wrong).status_code for _ in before[case]] == before[case]  # its rows made
    with rows_held(RateWindow):
        if first:
            time.sleep(1.02 - time.time() % 1)  # the next second: its window's first count makes a row
        answers = timed_answers(prefix, token if first else wrong)
    assert [status for status, _ in answers] == [expected] * 3
    assert all(took < 0.5 + 1.0 for _, took in answers), answers
