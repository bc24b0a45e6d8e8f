"""A client's rate counted a lease at a time: a busy client costs the shared cache or the database one write per
lease, not one per request, on Django's views and the fast path alike, and no lease ever admits past the limit."""

import asyncio
import os
import time
import uuid
from io import StringIO
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.db import connections, router
from django.test.utils import CaptureQueriesContext

from django_segment_seq.service import leases as leases_module
from django_segment_seq.service import throttle
from django_segment_seq.service.leases import LEASE_MOST, Leases
from django_segment_seq.service.models import RateWindow
from django_segment_seq.service.tokens import Rate
from tests.service.test_lock_bounds import rows_held, timed_answers
from tests.service.test_trust import PATHS, add_client, admitted_by_threads, post
from tests.support.fast_client import application, connections_kept, exchange

pytestmark = pytest.mark.django_db(transaction=True)
# Where counts are kept: this process's memory, the database (for a cache that culls) and the database again
# through the other cache that culls.
CACHES = {
    "memory": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "database": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "segment_seq_lease_cache"},
    "file": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache"},
}


# The statements Django logs for its own transactions and savepoints (on some backends), not counted above.
TRANSACTION_VERBS = {"BEGIN", "COMMIT", "SAVEPOINT", "RELEASE", "ROLLBACK"}


@pytest.fixture(params=list(CACHES))
def rate_cache(request, settings, tmp_path):
    """The `default` cache of each kind, the shared counts it leads to spied on: how often each was raised."""
    backend = dict(CACHES[request.param])
    if request.param == "file":
        backend["LOCATION"] = str(tmp_path / "cache")
    settings.CACHES = {"default": backend}
    if request.param == "database":
        call_command("createcachetable", stdout=StringIO())
    raised: list[int] = []
    spied = {"counted": throttle.counted, "counted_in_database": throttle.counted_in_database}

    def spy(name: str):
        def raise_count(*args, **kwargs):
            granted = spied[name](*args, **kwargs)
            raised.append(granted)
            return granted

        return raise_count

    patch = pytest.MonkeyPatch()
    for name in spied:
        patch.setattr(throttle, name, spy(name))
    yield raised
    patch.undo()


@pytest.mark.parametrize("prefix", PATHS)
def test_a_busy_client_raises_the_shared_count_once_per_lease(prefix, rate_cache):
    token = add_client("busy", "order*", "--rate", "100000/h")
    statuses = [post(prefix, "order/next", token).status_code for _ in range(120)]
    assert statuses == [200] * 120
    # Leases of 1, 2, 4, ... requests while they are used up within LEASE_SECONDS: far fewer writes than requests
    # (one per request before), and every request admitted was counted in the shared count first.
    assert len(rate_cache) <= 20, rate_cache
    assert sum(rate_cache) >= 120


def test_a_rarely_seen_client_is_counted_one_request_at_a_time():
    held = Leases()
    assert held.size("rare", 100_000) == 1  # not seen before
    held.add("rare", (3600, 1), 1, 1)
    held.held["rare"].taken_at -= 5  # its last lease taken 5 s ago: it comes less often than LEASE_SECONDS
    assert held.size("rare", 100_000) == 1


def test_a_lease_is_sized_to_the_pace_of_the_last_and_stays_within_a_share_of_the_limit(monkeypatch):
    """A client that turns busy gets a lease of its pace from its second lease on: doubling from one took it thirteen
    leases to reach LEASE_MOST, each awaited by the requests that had used up the one before (on the fast path under
    load, a tenth of a second or more of stalled requests on each worker at every start of a burst)."""
    clock = [100.0]
    monkeypatch.setattr(leases_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    held = Leases()
    assert held.size("busy", 1_000_000) == 1  # not seen lately: one request at a time
    held.add("busy", (3600, 1), 1, 1)
    clock[0] += 0.002  # used up in 2 ms: 500 requests a second, so 250 in LEASE_SECONDS
    assert held.size("busy", 1_000_000) == 500 * leases_module.LEASE_SECONDS
    held.add("busy", (3600, 1), 250, 1)
    for _ in range(124):
        assert held.take("busy", (3600, 1))
    clock[0] += 0.001  # half of it in 1 ms: far past what a lease may hold
    assert held.size("busy", 1_000_000) == LEASE_MOST  # at most LEASE_MOST
    assert held.size("busy", 150_000) == 1_500  # at most 1/100 of the limit
    assert Leases().size("small", 150) == 1 and held.size("busy", 150) == 1
    clock[0] += 60  # a slow pace since: the next lease shrinks with it
    assert held.size("busy", 1_000_000) == round(125 * leases_module.LEASE_SECONDS / 60.001)


@pytest.mark.parametrize("per_second", [2500, 9000])
def test_a_steady_busy_client_raises_the_shared_count_about_once_a_second(monkeypatch, per_second):
    """A process serving one client thousands of times a second (a worker of the fast path under load: 2,500 on
    granian, 9,000 on uvicorn) takes a lease about once a second once it has grown. Before, a lease lasted 0.1 s
    at most, then at most 1,024 requests (nine a second at 9,000), and each lease's statements, which take the GIL
    back from the worker's busy event loop, cost the rated fast path 5 to 15 % of its throughput on a 2-core machine
    (benchmarks/service_paths.py)."""
    clock = [0.0]
    monkeypatch.setattr(leases_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    held, window, taken = Leases(), (60, 1), []
    for request in range(per_second * 4):
        clock[0] = request / per_second
        if not held.take("busy", window):
            size = held.size("busy", 10_000_000)
            held.add("busy", window, size, 1)
            taken.append((clock[0], size))
    steady = [size for at, size in taken if at >= 1.0]
    assert steady and min(steady) >= per_second * leases_module.LEASE_SECONDS, taken
    assert len(steady) <= 2 * 3, f"{len(steady)} leases in 3 s"


def test_a_lease_of_an_ended_window_admits_nothing():
    held = Leases()
    held.add("client", (3600, 1), 10, 1)
    assert held.take("client", (3600, 1))
    assert not held.take("client", (3600, 2))
    assert not held.take("client", (60, 1))  # the same number of a window of another length


def test_a_lease_says_once_that_it_runs_low():
    held = Leases()
    held.add("client", (3600, 1), 10, 0)
    flags = []
    for _ in range(10):
        assert held.take("client", (3600, 1))
        flags.append("client" in held.low)
        held.low.discard("client")  # the next lease tried, as lease_ahead() does
    # Down to half at the fifth request: the next lease is taken ahead once, not again by each request after it.
    assert flags == [False] * 4 + [True] + [False] * 5
    assert not held.take("client", (3600, 1))


def test_a_ticket_taken_on_the_fast_path_says_when_the_next_lease_may_be_due(monkeypatch):
    """lease_ticket() counts a request from the lease in memory and says when LeaseTakers.ahead() must look: once the
    lease runs low, and in the last NEXT_WINDOW_AHEAD of the window; else it need not, which spares every other
    request of a busy client that look."""
    key, rate, now = f"ticket-{uuid.uuid4().hex}", Rate(100_000, 60), [60 * 1000 + 30.0]
    monkeypatch.setattr(throttle, "time", SimpleNamespace(time=lambda: now[0]))
    monkeypatch.setattr(throttle, "leases", Leases())
    assert throttle.lease_ticket(key, rate) is None  # no lease: nothing counted
    throttle.leases.add(key, (60, 1000), 10, 0)
    assert [throttle.lease_ticket(key, rate) for _ in range(4)] == [False] * 4
    assert throttle.lease_ticket(key, rate) is True  # down to half: the next lease is due
    throttle.leases.low.discard(key)  # taken ahead, as lease_ahead() does
    assert throttle.lease_ticket(key, rate) is False
    now[0] = 60 * 1001 - throttle.NEXT_WINDOW_AHEAD / 2
    assert throttle.lease_ticket(key, rate) is True  # the window ends soon: the next window's lease is due
    assert [throttle.lease_ticket(key, rate) for _ in range(4)] == [True, True, True, None]  # 10 tickets, each once
    now[0] = 60 * 1001 + 1
    assert throttle.lease_ticket(key, rate) is None  # a lease of an ended window admits nothing


def test_leases_never_admit_past_the_limit_under_concurrency(rate_cache):
    key = f"leased-{uuid.uuid4().hex}"
    admitted = admitted_by_threads(lambda: throttle.retry_after(key, Rate(500, 3600), ahead=True), threads=8, each=120)
    # 960 requests, 500 in the window's limit: what one process leased and did not use is at most one lease.
    assert len(admitted) == 8 and 500 - 5 <= sum(admitted) <= 500, admitted
    assert sum(rate_cache) <= 500


def test_a_windows_count_costs_few_statements_on_the_counting_thread():
    """Each statement of a count takes the GIL back from a busy event loop (see LEASE_MOST): a window's first count
    sends four besides its transactions' (the update that finds no row, the read that says so, the row made, ended
    rows deleted), not five (a second read asked again whether the row existed); a lease after it, one; a full
    window, two."""
    name, ends_at = f"segment_seq:rate:statements-{uuid.uuid4().hex}:3600:1", time.time() + 3600
    connection = connections[router.db_for_write(RateWindow)]
    with CaptureQueriesContext(connection) as first:
        assert throttle.counted_in_rows(name, 10, ends_at, 4) == 4
    with CaptureQueriesContext(connection) as lease:
        assert throttle.counted_in_rows(name, 10, ends_at, 4) == 4
    with CaptureQueriesContext(connection) as rest:
        assert throttle.counted_in_rows(name, 10, ends_at, 4) == 2  # what is left
    with CaptureQueriesContext(connection) as full:
        assert throttle.counted_in_rows(name, 10, ends_at, 4) == 0
    kinds = [
        [verb for query in captured if (verb := query["sql"].split()[0].upper()) not in TRANSACTION_VERBS]
        for captured in (first, lease, rest, full)
    ]
    assert kinds == [["UPDATE", "SELECT", "INSERT", "DELETE"], ["UPDATE"], ["UPDATE", "SELECT", "UPDATE"],
                     ["UPDATE", "SELECT"]]  # fmt: skip


def test_leases_are_forgotten_with_the_cache_they_were_counted_in(settings):
    leases_module.leases.add("forgotten", (3600, 1), 5, 1)
    settings.CACHES = {"default": CACHES["memory"]}
    assert not leases_module.leases.take("forgotten", (3600, 1))


@pytest.mark.parametrize("prefix", ["/ids/", "/aids/", "fast"])
def test_a_held_rate_window_delays_a_request_at_most_the_lock_timeout(prefix, rate_cache, settings, backend):
    """A session holding the window's row: the fast path's requests waited for its lock as long as it lasted, each
    behind the one before on the rate's thread; now each goes through (as when the cache fails) within LOCK_TIMEOUT."""
    if backend == "sqlite" or throttle.kept_in() is not throttle.Kept.DATABASE:
        pytest.skip("a row held by another session: the rate counted in the database, on a server with row locks")
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.5}
    token = add_client("held", "order*", "--rate", "100000/h")
    assert post(prefix, "order/next", token).status_code == 200  # the window's row made, its lease of one used
    with rows_held(RateWindow):
        answers = timed_answers(prefix, token)
    assert [status for status, _ in answers] == [200, 200, 200]
    assert all(took < 0.5 + 1.0 for _, took in answers), answers


def test_a_fork_child_does_not_use_its_parents_lease(tmp_path):
    """The parent's tickets were counted once, for the parent: a child that took them too would admit them twice."""
    held = leases_module.leases
    held.add("forked", (3600, 1), 10, 0)
    pid = os.fork()
    if pid == 0:  # child: report whether it could take a ticket, then leave without the parent's cleanup
        code = 1
        try:
            (tmp_path / "child.txt").write_text(str(held.take("forked", (3600, 1))))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "child.txt").read_text() == "False"
    assert sum(held.take("forked", (3600, 1)) for _ in range(12)) == 10  # the parent's ten, each once


def test_the_next_windows_lease_is_taken_before_the_window_begins(rate_cache, monkeypatch):
    """Each request of a busy client at the start of a window found no lease for it and waited for one, all at once
    (on the fast path, every request in flight, once a window); the next window's lease is now taken in the last
    NEXT_WINDOW_AHEAD of the current one, counted in the next window's own count."""
    key, rate, now = f"boundary-{uuid.uuid4().hex}", Rate(100_000, 60), [60 * 1000 + 30.0]
    monkeypatch.setattr(throttle, "time", SimpleNamespace(time=lambda: now[0]))
    assert throttle.retry_after(key, rate, ahead=True) is None  # counted in window 1000
    assert throttle.next_window_due(key, rate) is None  # 30 s before its end
    now[0] = 60 * 1001 - throttle.NEXT_WINDOW_AHEAD / 2
    if throttle.kept_in() is throttle.Kept.MEMORY:
        assert throttle.next_window_due(key, rate) is None  # counted on the loop when needed: nothing to wait for
        return
    assert throttle.next_window_due(key, rate) == 1001
    throttle.lease_ahead(key, rate, coming=1001)
    assert throttle.next_window_due(key, rate) is None  # taken once
    raised = len(rate_cache)
    now[0] = 60 * 1001 + 0.01
    assert throttle.retry_after_in_memory(key, rate) is None  # the window began: admitted from its lease, in memory
    assert len(rate_cache) == raised
    assert sum(rate_cache) <= 2 * 100_000


@pytest.mark.parametrize("ahead", [False, True], ids=["one", "lease"])
def test_a_request_whose_window_ended_while_it_was_counted_is_counted_in_the_next(rate_cache, monkeypatch, ahead):
    """A count that took long met its window's row deleted as ended by another process (the database and file
    caches), or full: the request was refused with a 429 for a window already over (seen once in a smoke run of a
    `1000000/s` client at 3,400 requests a second). It is now counted in the window it is in."""
    key, rate, now = f"late-{uuid.uuid4().hex}", Rate(1_000_000, 1), [1000.99]
    monkeypatch.setattr(throttle, "time", SimpleNamespace(time=lambda: now[0]))
    reserve = throttle.reserved
    windows = []

    def late(name, window, rate, size):
        windows.append(window)
        if window == 1000:  # its row gone by the time the count reached it, the window over
            now[0] = 1001.2
            return 0
        return reserve(name, window, rate, size)

    monkeypatch.setattr(throttle, "reserved", late)
    assert throttle.retry_after(key, rate, ahead=ahead) is None
    assert windows == [1000, 1001]
    monkeypatch.setattr(throttle, "reserved", lambda *args: 0)  # a window that is full and not over: refused
    now[0] = 1001.5
    assert throttle.retry_after(f"full-{key}", rate, ahead=ahead) == 1


def test_a_small_limit_is_counted_exactly_while_many_requests_wait_for_slow_counts(settings, tmp_path, monkeypatch):
    """48 requests at once on one event loop (a worker of the fast path) for a `30/h` client whose lease is one
    request, each count taking 0.1 s (a loaded machine, SQLite's one writer), LOCK_TIMEOUT 0.5 s: exactly 30
    answered 200. Before, the waiting requests were counted one at a time, so those still waiting after
    LOCK_TIMEOUT went through uncounted (50 of 48 + 2 answered 200); now one count takes a lease for every request
    waiting, and a window found full refuses the rest from memory."""
    settings.CACHES = {"default": {**CACHES["file"], "LOCATION": str(tmp_path / "cache")}}
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.5}
    token = add_client("slowcount", "order*", "--rate", "30/h")
    real = throttle.counted_in_database

    def slow_count(*args, **kwargs):
        time.sleep(0.1)
        return real(*args, **kwargs)

    monkeypatch.setattr(throttle, "counted_in_database", slow_count)
    hour = int(time.time() // 3600)
    warm = fast_requests_at_once(token, "order/next", 1) + fast_requests_at_once(token, "order/next", 1)
    # Both admitted and remembered: the same request is now counted on the loop, from the lease.
    statuses = fast_requests_at_once(token, "order/next", 48)
    if int(time.time() // 3600) != hour:
        pytest.skip("an hour's window ended during the test")
    assert warm == [200, 200]
    assert statuses.count(200) == 28 and statuses.count(429) == 20, sorted(statuses)


def fast_requests_at_once(token: str, path: str, count: int) -> list[int]:
    """`count` requests sent at once to the fast path, on one event loop as a worker serves them: their statuses."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/ids/" + path, "raw_path": ("/ids/" + path).encode(), "root_path": "", "query_string": b"",
        "headers": [(b"authorization", f"Bearer {token}".encode()), (b"content-type", b"application/json"),
                    (b"content-length", b"2"), (b"host", b"testserver")],
        "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
    }  # fmt: skip

    async def all_at_once() -> list[list[dict[str, Any]]]:
        return await asyncio.gather(*(exchange(application(), dict(scope), b"{}") for _ in range(count)))

    with connections_kept():
        answers = async_to_sync(all_at_once)()
    return [messages[0]["status"] for messages in answers]


def test_a_host_whose_clock_runs_ahead_deletes_no_window_still_live_on_another(monkeypatch, settings, tmp_path):
    """Two servers share the database (counts in RateWindow, for a file cache); B's clock runs 30 s ahead of A's.
    B's first count of its next window deleted every row its own clock saw ended, A's live window among them, so A
    counted that window again from nothing (a 100/m client got 190 requests from A in a minute). Now a row is
    deleted only once it ended ENDED_FOR ago, which no host whose clock is less far off still counts in."""
    settings.CACHES = {"default": {**CACHES["file"], "LOCATION": str(tmp_path / "cache")}}
    assert throttle.kept_in() is throttle.Kept.DATABASE
    a_now, rate, key = 60 * 1000 + 45.0, Rate(100, 60), f"skewed-{uuid.uuid4().hex}"
    clock = [a_now]
    monkeypatch.setattr(throttle, "time", SimpleNamespace(time=lambda: clock[0]))
    assert sum(throttle.retry_after(key, rate) is None for _ in range(100)) == 100  # A: the whole minute's limit
    clock[0] = a_now + 30  # B, whose clock reads window 1001: another client's first count there
    assert throttle.retry_after(f"neighbour-{uuid.uuid4().hex}", rate) is None
    clock[0] = a_now + 1  # A, still in window 1000
    assert throttle.retry_after(key, rate) == 14  # before: None, counted in a new row of the window
    assert RateWindow.objects.get(key=throttle.window_name(key, rate, 1000)).count == 100
    clock[0] = 60 * 1001 + throttle.ENDED_FOR + 1  # every host agrees window 1000 ended: its row goes
    assert throttle.retry_after(f"later-{uuid.uuid4().hex}", rate) is None
    assert not RateWindow.objects.filter(key=throttle.window_name(key, rate, 1000)).exists()


# Server B of the test below: a process of its own whose clock runs `offset` seconds ahead, counting one request of a
# client in the window its clock is in, on a file cache (so the count is kept in RateWindow, in the shared database).
SKEWED_SERVER = """
import sys
from types import SimpleNamespace

import django

django.setup()
from django.conf import settings

file_cache = {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": sys.argv[3]}
settings.CACHES = {"default": file_cache}
from django_segment_seq.service import throttle
from django_segment_seq.service.tokens import Rate

throttle.time = SimpleNamespace(time=lambda: float(sys.argv[2]))
print(throttle.retry_after(sys.argv[1], Rate(100, 60)))
"""


@pytest.mark.processes
def test_two_servers_whose_clocks_differ_hold_a_clients_rate_on_the_lagging_one(settings, tmp_path):
    """The issue's two servers, sharing the database and a file cache: B's clock 30 s ahead of A's. A client that
    used its 100/m on A was let through again on A once B opened its next window (before: 190 in A's minute)."""
    import subprocess
    import sys

    from tests.conftest import ROOT, worker_env

    shared = str(tmp_path / "cache")
    settings.CACHES = {"default": {**CACHES["file"], "LOCATION": shared}}
    a_now, rate, key = 60 * 1000 + 45.0, Rate(100, 60), f"two-servers-{uuid.uuid4().hex}"
    clock = [a_now]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(throttle, "time", SimpleNamespace(time=lambda: clock[0]))
        assert sum(throttle.retry_after(key, rate) is None for _ in range(100)) == 100
        connections.close_all()
        b = [sys.executable, "-c", SKEWED_SERVER, f"neighbour-{uuid.uuid4().hex}", str(a_now + 30), shared]
        out = subprocess.run(b, cwd=ROOT, env=worker_env(), capture_output=True, text=True, timeout=120)
        assert (out.returncode, out.stdout.strip()) == (0, "None"), out.stderr  # B's first count of window 1001
        clock[0] = a_now + 5
        assert [throttle.retry_after(key, rate) for _ in range(3)] == [10] * 3  # before: None, None, None
