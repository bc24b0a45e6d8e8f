"""The failover fence of Snowflake worker leases: for a lease time after a failover is first noticed, a newly taken
worker id makes no id, since a lease the failover lost may still be in use by another process."""

import time

import pytest
from django.conf import settings
from django.db import connections
from django.test.utils import override_settings

from django_segment_seq import WorkerIdFenced, next_snowflake, parse_snowflake, release_worker_leases
from django_segment_seq.db.history import server_history
from django_segment_seq.models import WorkerLease
from django_segment_seq.snowflake.leases import failover_fence

TTL = 2  # seconds: the fence lasts a lease time


def row(worker_id: int, history: str, noticed: int = 0) -> tuple:
    """A row as SELECT_ROWS reads it: worker id, expires, ceiling, version, now, history, failover noticed."""
    return (worker_id, 0, 0, 1, 0, history, noticed)


def test_the_first_to_meet_rows_of_another_history_notices_the_failover():
    assert failover_fence([row(0, "pg:1:1")], "pg:1:2", 50_000, 2_000) == (50_000, 52_000)


def test_a_noticed_failover_fences_everyone_until_a_lease_time_after_it():
    rows = [row(0, "pg:1:1"), row(1, "pg:1:2", noticed=49_000)]
    assert failover_fence(rows, "pg:1:2", 50_000, 2_000) == (49_000, 51_000)
    assert failover_fence(rows, "pg:1:2", 52_000, 2_000) == (49_000, 0)  # a lease time later: no fence


@pytest.mark.parametrize(
    "rows", [[], [row(0, "pg:1:2")], [row(0, "")]], ids=["no rows", "same history", "written before the fence"]
)
def test_no_failover_no_fence(rows):
    assert failover_fence(rows, "pg:1:2", 50_000, 2_000) == (0, 0)


def test_sqlite_has_no_history_and_no_fence():
    assert failover_fence([row(0, "pg:1:1")], "", 50_000, 2_000) == (0, 0)


@pytest.fixture
def leases(transactional_db, backend):
    if backend == "sqlite":
        pytest.skip("SQLite has one file and no failover: its rows record no history")
    release_worker_leases()
    with override_settings(SEGMENT_SEQ={**settings.SEGMENT_SEQ, "SNOWFLAKE_LEASE_SECONDS": TTL}):
        yield
    release_worker_leases()


def test_a_worker_id_taken_after_a_failover_makes_ids_only_after_the_fence(leases):
    # A lease row last written on the old primary's history: what a promoted standby holds after a failover.
    WorkerLease.objects.create(layout="classic", worker_id=5, history="pg:old-server:1", renewed_ms=1)
    taken = time.time()
    with pytest.raises(WorkerIdFenced, match="after a database failover") as fenced:
        next_snowflake()
    assert 0 < fenced.value.seconds <= TTL
    lease = WorkerLease.objects.get(layout="classic", worker_id=fenced.value.worker_id)
    assert lease.history == server_history(connections["default"]) and lease.failover_ms > 0
    time.sleep(fenced.value.seconds + 0.05)
    first = parse_snowflake(next_snowflake())
    assert first.instant.timestamp() >= taken + TTL - 0.5  # no id carries a time inside the fence


def test_after_the_fence_new_worker_ids_are_not_fenced_again(leases):
    WorkerLease.objects.create(layout="classic", worker_id=5, history="pg:old-server:1", renewed_ms=1)
    WorkerLease.objects.create(
        layout="classic",
        worker_id=6,
        history=server_history(connections["default"]),
        failover_ms=int((time.time() - 3 * TTL) * 1000),  # noticed long ago
    )
    next_snowflake()  # no WorkerIdFenced: the failover was noticed more than a lease time ago
