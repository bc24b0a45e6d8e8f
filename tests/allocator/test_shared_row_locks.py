"""Row locks shared by several lockers: the caller's own lock is recognised under a MultiXact, and beside another
transaction's share lock (PostgreSQL keeps such lockers in a MultiXact, MariaDB in InnoDB's lock tables)."""

import threading
import time

import pytest
from django.conf import settings
from django.db import connection, connections, transaction

from django_segment_seq import next_value, sequence_stats
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.scenarios import run_scenario

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(settings.BACKEND == "sqlite", reason="row locks: SQLite has only its file write lock"),
    pytest.mark.processes,
]

SHARE = {"postgres": "FOR SHARE", "mariadb": "LOCK IN SHARE MODE"}


def share_lock(name: str) -> None:
    table = connection.ops.quote_name(Sequence._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT value FROM {table} WHERE name = %s {SHARE[settings.BACKEND]}", [name])
        assert cursor.fetchone() is not None


@pytest.mark.skipif(settings.BACKEND != "postgres", reason="a MultiXact is PostgreSQL's")
@pytest.mark.parametrize("first", ["no-key", "share"])
def test_callers_own_lock_under_a_multixact(first):
    """Before: FOR NO KEY UPDATE (or FOR SHARE), then FOR UPDATE in a nested atomic(): SequenceUnavailable after 2 s."""
    Sequence.objects.create(name="mx", step=10)
    started = time.monotonic()
    with transaction.atomic():
        if first == "no-key":
            Sequence.objects.select_for_update(no_key=True).get(name="mx")
        else:
            share_lock("mx")
        with transaction.atomic():
            Sequence.objects.select_for_update().get(name="mx")  # the row's xmax is now a MultiXact
            ours = [next_value("mx") for _ in range(3)]
    waited = time.monotonic() - started
    assert waited < 1.5, f"numbers of a row the caller held took {waited:.2f} s"
    assert sequence_stats()[("default", "mx")].fetched_in_caller_transaction >= 1
    theirs = run_scenario("take", "mx", 20)["numbers"]
    assert_unique(ours + theirs, 3 + 20)


def test_callers_share_lock_beside_another_share_lock():
    """The caller and another transaction both hold the row FOR SHARE; the other ends after 1 s.

    Before (PostgreSQL): the private connection waited for the caller itself: SequenceUnavailable after 2 s.
    After: the caller's own transaction takes the block, waiting (within LOCK_TIMEOUT) for the other sharer only.
    """
    Sequence.objects.create(name="sh", step=10)
    locked, release = threading.Event(), threading.Event()

    def other_sharer() -> None:
        try:
            with transaction.atomic():
                share_lock("sh")
                locked.set()
                release.wait(5)
                time.sleep(1.0)
        finally:
            connections.close_all()

    other = threading.Thread(target=other_sharer)
    other.start()
    try:
        assert locked.wait(10)
        with transaction.atomic():
            share_lock("sh")
            release.set()
            ours = [next_value("sh") for _ in range(3)]
    finally:
        release.set()
        other.join(15)
    assert not other.is_alive()
    theirs = run_scenario("take", "sh", 20)["numbers"]
    assert_unique(ours + theirs, 3 + 20)
