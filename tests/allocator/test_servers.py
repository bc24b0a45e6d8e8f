"""SERVERS and CLUSTER_PAUSE without a cluster: addresses, node states, checks, servers tried in turn, and the
longer wait on a Galera node. The Galera cluster itself is driven in tests/clusters/test_galera.py."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from django.conf import settings
from django.core.checks import run_checks
from django.db import OperationalError, connection
from django.db import connections as databases
from django.test.utils import CaptureQueriesContext

from django_segment_seq import clear_cache, next_value
from django_segment_seq.allocator import connections as private
from django_segment_seq.allocator import retry
from django_segment_seq.allocator.connections import open_private_connection, split_address
from django_segment_seq.db.nodes import NOT_A_CLUSTER, node_state, state_of
from django_segment_seq.exceptions import SequenceUnavailable
from django_segment_seq.models import Sequence

# The test models conceal numbers, so every SEGMENT_SEQ tried here keeps the suite's key.
KEPT = dict(settings.SEGMENT_SEQ)
on_mariadb = pytest.mark.skipif(settings.BACKEND != "mariadb", reason="SERVERS is for MariaDB and MySQL")
# A loopback port nothing listens on: a connection there is refused at once, as on a node just killed.
DEAD = "127.0.0.1:1"


@pytest.mark.parametrize(
    ("address", "split"),
    [
        ("db1:3306", ("db1", "3306")),
        ("127.0.0.1:4401", ("127.0.0.1", "4401")),
        ("[::1]:4401", ("::1", "4401")),
        ("::1", ("::1", "")),
        ("db1", ("db1", "")),
    ],
)
def test_addresses(address, split):
    assert split_address(address) == split


@pytest.mark.parametrize(
    ("answer", "refusal"),
    [
        ((0, None, None, None), None),  # MariaDB without Galera
        ((0, "OFF", None, None), None),
        ((1, None, None, None), "is read-only"),
        ((0, "ON", "Synced", "ON"), None),
        ((0, "ON", "Joined", "ON"), "is a Galera node that is not Synced (Joined)"),
        ((0, "ON", "Donor/Desynced", "ON"), "is a Galera node that is not Synced (Donor/Desynced)"),
        ((0, "ON", "Initialized", "OFF"), "is a Galera node that is not ready (wsrep_ready OFF)"),
        ((1, "ON", "Synced", "ON"), "is read-only"),
    ],
)
def test_which_servers_are_refused(answer, refusal):
    assert state_of(answer).refusal() == refusal


@pytest.mark.parametrize(
    ("servers", "ids"),
    [
        ({"default": ["db1:3306", "db2"]}, []),
        ({"nowhere": ["db1:3306"]}, ["django_segment_seq.E050"]),
        ({"default": []}, ["django_segment_seq.E050"]),
        ({"default": "db1:3306"}, ["django_segment_seq.E050"]),
        ({"default": ["db1:port"]}, ["django_segment_seq.E050"]),
        ({"default": [3306]}, ["django_segment_seq.E050"]),
        (["db1:3306"], ["django_segment_seq.E003"]),
    ],
)
def test_servers_are_checked(settings, servers, ids):
    settings.SEGMENT_SEQ = {**KEPT, "SERVERS": servers}
    if ids == [] and settings.BACKEND != "mariadb":
        ids = ["django_segment_seq.E051"]  # well formed, but not a MariaDB or MySQL database
    assert [message.id for message in run_checks()] == ids


@on_mariadb
@pytest.mark.django_db(transaction=True)
def test_no_server_is_tried_after_a_silent_one_once_the_calls_time_ran_out(settings):
    """CLUSTER_LOST: past the deadline, no server is tried after one that did not answer (the next might cost another
    connect_timeout); the attempt fails with NoServerFit, which the allocation gives up on. One that refused at once
    (a node just killed) is followed by the next, and so is any in time."""
    here = f"{connection.settings_dict['HOST'] or '127.0.0.1'}:{connection.settings_dict['PORT'] or 3306}"
    options = databases.settings["default"].setdefault("OPTIONS", {})
    before = options.get("connect_timeout")
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts connections, never says a word
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        options["connect_timeout"] = 1
        try:
            settings.SEGMENT_SEQ = {**KEPT, "SERVERS": {"default": [address, here]}}
            private._down.clear()
            with pytest.raises(private.NoServerFit, match="time ran out"):
                open_private_connection("default", deadline=time.monotonic() - 1)
            private._down.clear()
            open_private_connection("default", deadline=time.monotonic() + 60).close()  # in time: the next is tried
            settings.SEGMENT_SEQ = {**KEPT, "SERVERS": {"default": [DEAD, here]}}
            private._down.clear()
            open_private_connection("default", deadline=time.monotonic() - 1).close()  # refused at once: the next
        finally:
            options.pop("connect_timeout") if before is None else options.update(connect_timeout=before)
            private._down.clear()


@on_mariadb
@pytest.mark.django_db(transaction=True)
def test_servers_are_tried_in_turn_and_a_dead_one_last(settings):
    here = f"{connection.settings_dict['HOST'] or '127.0.0.1'}:{connection.settings_dict['PORT'] or 3306}"
    settings.SEGMENT_SEQ = {**KEPT, "SERVERS": {"default": [DEAD, here]}}
    private._down.clear()
    opened = open_private_connection("default")
    try:
        assert opened.settings_dict["PORT"] == here.rpartition(":")[2]
        assert node_state(opened) == NOT_A_CLUSTER  # the suite's server: writable, no Galera
    finally:
        opened.close()
    assert DEAD in private._down  # tried last from now on, until RECHECK_SECONDS pass
    settings.SEGMENT_SEQ = {**KEPT, "SERVERS": {"default": [DEAD, "127.0.0.1:2"]}}
    with pytest.raises(OperationalError, match="no server of database 'default' can take a range now"):
        open_private_connection("default")
    private._down.clear()


@on_mariadb
@pytest.mark.django_db(transaction=True)
def test_with_servers_the_callers_own_connection_is_not_used(settings):
    """The caller's connection knows one server, maybe the dead one: ranges go through a private connection."""
    here = f"{connection.settings_dict['HOST'] or '127.0.0.1'}:{connection.settings_dict['PORT'] or 3306}"
    settings.SEGMENT_SEQ = {**KEPT, "SERVERS": {"default": [DEAD, here]}}
    connection.close()
    assert [next_value("servers") for _ in range(3)] == [1, 2, 3]
    assert connection.connection is None
    private._down.clear()


def hold_row(name: str, seconds: float, locked: threading.Event) -> None:
    """Lock the row in a transaction of another session for `seconds`, as a Galera cluster's pause holds commits."""
    import MySQLdb  # installed only where MariaDB is tested

    params = connection.settings_dict
    conn = MySQLdb.connect(
        host=params["HOST"] or "127.0.0.1", port=int(params["PORT"] or 3306), user=params["USER"],
        password=params["PASSWORD"], db=params["NAME"],
    )  # fmt: skip
    try:
        cursor = conn.cursor()
        cursor.execute("BEGIN")
        cursor.execute("SELECT id FROM django_segment_seq_sequence WHERE name = %s FOR UPDATE", [name])
        locked.set()
        time.sleep(seconds)
        conn.rollback()
    finally:
        conn.close()


@on_mariadb
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("galera", [False, True], ids=["plain", "galera"])
def test_a_galera_node_waits_cluster_pause_not_lock_timeout(settings, monkeypatch, galera):
    """A row held for 2.5 s: LOCK_TIMEOUT 1 s gives up on a plain server; CLUSTER_PAUSE 6 s waits it out on Galera."""
    settings.SEGMENT_SEQ = {**KEPT, "LOCK_TIMEOUT": 1, "CLUSTER_PAUSE": 6}
    monkeypatch.setattr(retry, "on_galera", lambda connection: galera)
    next_value("paused")
    Sequence.objects.filter(name="paused").update(value=1000)  # the cached range is left behind
    clear_cache()
    locked = threading.Event()
    holder = threading.Thread(target=hold_row, args=("paused", 2.5, locked))
    holder.start()
    try:
        assert locked.wait(10)
        started = time.monotonic()
        if galera:
            assert next_value("paused") == 1001
            assert 1.5 < time.monotonic() - started < 6
        else:
            with pytest.raises(SequenceUnavailable):
                next_value("paused")
            assert time.monotonic() - started < 2.5
    finally:
        holder.join()


@pytest.mark.django_db(transaction=True)
def test_a_node_state_is_asked_again_on_every_new_session(backend):
    """A session opened after a node came back must not answer with the state cached from the one before it."""
    if backend != "mariadb":
        pytest.skip("node states are MariaDB's")
    caller = databases["default"]
    node_state(caller)
    for _ in range(3):  # a new DB-API connection may reuse the address of the one closed just before
        caller.close()
        caller.ensure_connection()
        with CaptureQueriesContext(caller) as new_session:
            node_state(caller)
        assert len(new_session) == 1
