"""A client's rate counted a lease at a time: a busy client costs the shared cache or the database one write per
lease, not one per request, on Django's views and the fast path alike, and no lease ever admits past the limit."""

import os
import threading
import time
import uuid
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connections, transaction

from django_segment_seq.service import leases as leases_module
from django_segment_seq.service import throttle
from django_segment_seq.service.leases import LEASE_MOST, Leases
from django_segment_seq.service.models import RateWindow
from django_segment_seq.service.tokens import Rate
from tests.service.test_trust import PATHS, add_client, admitted_by_threads, post

pytestmark = pytest.mark.django_db(transaction=True)
# Where counts are kept: this process's memory, the database (for a cache that culls) and the database again
# through the other cache that culls.
CACHES = {
    "memory": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "database": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "segment_seq_lease_cache"},
    "file": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache"},
}


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
    held.add("rare", "w1", 1, 1)
    held.held["rare"].taken_at -= 1  # its last lease taken a second ago: it comes less often than LEASE_SECONDS
    assert held.size("rare", 100_000) == 1


def test_a_lease_grows_while_used_up_fast_and_stays_within_a_share_of_the_limit():
    held = Leases()
    sizes = []
    for _ in range(14):
        size = held.size("busy", 1_000_000)
        sizes.append(size)
        held.add("busy", "w1", size, size)  # used up at once
    assert sizes[:4] == [1, 2, 4, 8] and max(sizes) == LEASE_MOST == sizes[-1]
    assert Leases().size("small", 150) == 1 and held.size("busy", 150) == 1  # at most 1/100 of the limit


def test_a_lease_of_an_ended_window_admits_nothing():
    held = Leases()
    held.add("client", "window-1", 10, 1)
    assert held.take("client", "window-1")
    assert not held.take("client", "window-2")


def test_leases_never_admit_past_the_limit_under_concurrency(rate_cache):
    key = f"leased-{uuid.uuid4().hex}"
    admitted = admitted_by_threads(lambda: throttle.retry_after(key, Rate(500, 3600), ahead=True), threads=8, each=120)
    # 960 requests, 500 in the window's limit: what one process leased and did not use is at most one lease.
    assert len(admitted) == 8 and 500 - 5 <= sum(admitted) <= 500, admitted
    assert sum(rate_cache) <= 500


def test_leases_are_forgotten_with_the_cache_they_were_counted_in(settings):
    leases_module.leases.add("forgotten", "w", 5, 1)
    settings.CACHES = {"default": CACHES["memory"]}
    assert not leases_module.leases.take("forgotten", "w")


@pytest.mark.parametrize("prefix", ["fast"])
def test_a_held_rate_window_delays_a_request_at_most_the_lock_timeout(prefix, rate_cache, settings, backend):
    """A session holding the window's row: the fast path's requests waited for its lock as long as it lasted, each
    behind the one before on the rate's thread; now each goes through (as when the cache fails) within LOCK_TIMEOUT."""
    if backend == "sqlite" or throttle.kept_in() is not throttle.Kept.DATABASE:
        pytest.skip("a row held by another session: the rate counted in the database, on a server with row locks")
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.5}
    token = add_client("held", "order*", "--rate", "100000/h")
    assert post(prefix, "order/next", token).status_code == 200  # the window's row made, its lease of one used
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                list(RateWindow.objects.select_for_update())
                holding.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        answers = []
        for _ in range(3):
            started = time.monotonic()
            answers.append((post(prefix, "order/next", token).status_code, time.monotonic() - started))
    finally:
        release.set()
        holder.join(30)
    assert [status for status, _ in answers] == [200, 200, 200]
    assert all(took < 0.5 + 1.0 for _, took in answers), answers


def test_a_fork_child_does_not_use_its_parents_lease(tmp_path):
    """The parent's tickets were counted once, for the parent: a child that took them too would admit them twice."""
    held = leases_module.leases
    held.add("forked", "w", 10, 0)
    pid = os.fork()
    if pid == 0:  # child: report whether it could take a ticket, then leave without the parent's cleanup
        code = 1
        try:
            (tmp_path / "child.txt").write_text(str(held.take("forked", "w")))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "child.txt").read_text() == "False"
    assert sum(held.take("forked", "w") for _ in range(12)) == 10  # the parent's ten, each once
