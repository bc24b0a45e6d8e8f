"""manage.py segment_seq leases: every worker lease row with its holder and state, as a table and as JSON."""

import json
import os
import socket
import time
from io import StringIO

import pytest
from django.core.management import call_command

from django_segment_seq import next_snowflake, release_worker_leases
from django_segment_seq.models import WorkerLease
from django_segment_seq.snowflake.generator import held_worker_ids

pytestmark = pytest.mark.django_db(transaction=True)


def segment_seq(*args: str) -> str:
    out = StringIO()
    call_command("segment_seq", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def leases():
    """This process's lease, one of another live process, one expired and one given back."""
    release_worker_leases()
    next_snowflake()
    now_ms = int(time.time() * 1000)
    WorkerLease.objects.create(
        layout="classic",
        worker_id=1001,
        owner="web-2.example:4242",
        acquired_ms=now_ms - 5_000,
        renewed_ms=now_ms - 5_000,
        expires_ms=now_ms + 55_000,
    )
    WorkerLease.objects.create(
        layout="classic",
        worker_id=1002,
        owner="web-3.example:77",
        acquired_ms=now_ms - 600_000,
        renewed_ms=now_ms - 90_000,
        expires_ms=now_ms - 30_000,
    )
    WorkerLease.objects.create(
        layout="js53",
        worker_id=5,
        owner="worker:12",
        acquired_ms=now_ms - 9_000,
        renewed_ms=now_ms - 9_000,
        expires_ms=0,
    )
    yield held_worker_ids()["classic"]
    release_worker_leases()


def test_leases_table_shows_holder_state_and_time_left(leases):
    lines = segment_seq("leases").splitlines()
    assert lines[0].split() == ["LAYOUT", "WORKER", "HOST", "PID", "STATUS", "EXPIRES", "RENEWED"]
    rows = {(cells[0], int(cells[1])): cells for cells in (line.split() for line in lines[1:])}
    assert sorted(rows) == sorted([("classic", leases), ("classic", 1001), ("classic", 1002), ("js53", 5)])
    mine = rows["classic", leases]
    assert mine[2:5] == [socket.gethostname(), str(os.getpid()), "live"]
    assert mine[5] == "in" and 50 < float(mine[6]) <= 60 and mine[7] == "s"
    other = rows["classic", 1001]
    assert other[2:5] == ["web-2.example", "4242", "live"]
    expired = rows["classic", 1002]
    assert expired[2:5] == ["web-3.example", "77", "expired"]
    assert 25 < float(expired[5]) < 60 and expired[6:8] == ["s", "ago"]
    assert rows["js53", 5][4:6] == ["released", "-"]


def test_leases_live_only_and_after_release(leases):
    live = segment_seq("leases", "--live").splitlines()[1:]
    assert sorted(int(line.split()[1]) for line in live) == sorted([leases, 1001])
    release_worker_leases()
    rows = {int(line.split()[1]): line.split() for line in segment_seq("leases").splitlines()[1:]}
    assert rows[leases][4:6] == ["released", "-"]
    assert [int(line.split()[1]) for line in segment_seq("leases", "--live").splitlines()[1:]] == [1001]


def test_leases_json(leases):
    data = json.loads(segment_seq("leases", "--json"))
    assert data["database"] == "default"
    by_worker = {(entry["layout"], entry["worker_id"]): entry for entry in data["leases"]}
    mine = by_worker["classic", leases]
    assert (mine["host"], mine["pid"], mine["status"], mine["live"]) == (
        socket.gethostname(),
        os.getpid(),
        "live",
        True,
    )
    assert 50 < mine["expires_in"] <= 60 and mine["expires_at"] > mine["renewed_at"]
    expired = by_worker["classic", 1002]
    assert (expired["status"], expired["live"], expired["owner"]) == ("expired", False, "web-3.example:77")
    assert -60 < expired["expires_in"] < -25
    released = by_worker["js53", 5]
    assert (released["status"], released["expires_in"], released["expires_at"]) == ("released", None, None)
    live = json.loads(segment_seq("leases", "--live", "--json"))["leases"]
    assert {(entry["layout"], entry["worker_id"]) for entry in live} == {("classic", leases), ("classic", 1001)}


def test_list_mentions_live_leases(leases):
    text = segment_seq("list")
    assert text.splitlines()[-1] == (
        "Snowflake worker leases: 2 live (classic 2), 4 rows; `segment_seq leases` lists them."
    )
    assert "leases" not in json.dumps(json.loads(segment_seq("list", "--json")))


def test_no_leases():
    release_worker_leases()
    assert "No worker leases in database 'default'" in segment_seq("leases")
    assert "No live worker leases" in segment_seq("leases", "--live")
    assert json.loads(segment_seq("leases", "--json"))["leases"] == []
    assert "worker leases" not in segment_seq("list")
