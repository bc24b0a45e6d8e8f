"""The ID service under real servers: gunicorn (sync workers), uvicorn (async views) and uvicorn with the fast path in
front of Django, called over loopback by concurrent clients, a fuzzer and the Python client; every number collected
and checked for repeats."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_segment_seq.remote import RemoteError, RemoteSequence, RemoteUnavailable
from django_segment_seq.service.models import Client
from django_segment_seq.service.tokens import digest, new_token, shown_part
from tests.conftest import assert_unique, worker_env
from tests.support.id_service import LiveServer, call, load, raw

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]
KINDS = ["gunicorn", "uvicorn", "fast"]


@pytest.fixture(scope="module")
def servers(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[dict[str, LiveServer]]:
    """The servers on the test database, started once for the module and stopped at its end, failed or not."""
    folder = tmp_path_factory.mktemp("id_service")
    with django_db_blocker.unblock():
        env = worker_env(
            SERVICE_CACHE_DIR=str(folder / "cache"), DJANGO_SETTINGS_MODULE="tests.service_project.settings"
        )
    env["SEGMENT_SEQ_TEST_SETTINGS"] = json.dumps({"LOCK_TIMEOUT": 0.5, "CONNECTION_RETRIES": 2})
    started: dict[str, LiveServer] = {}
    try:
        for kind, workers in (("gunicorn", 3), ("uvicorn", 2), ("fast", 2)):
            server = LiveServer(kind, env, folder / f"{kind}.log", workers)
            started[kind] = server
            server.start()
        yield started
    finally:
        for server in started.values():
            server.stop()


def make_client(name: str = "shop", sequences: str = "order*", **fields: object) -> str:
    token = new_token()
    Client.objects.create(
        name=name, sequences=sequences, token_start=shown_part(token), token_digest=digest(token), **fields
    )
    return token


def fresh(name: str) -> str:
    """A sequence name of its own per test: the servers outlive each test's tables and keep their cached ranges."""
    return f"order-{name}-{time.monotonic_ns()}"


# Many callers, many processes, no repeats


@pytest.mark.parametrize("kind", KINDS)
def test_20_concurrent_clients_get_no_repeats(servers, kind):
    token = make_client(max_count=100)
    name = fresh(kind)
    result = load(servers[kind].url + name + "/next", token, clients=20, seconds=3)
    numbers = assert_unique(result.numbers())
    assert result.statuses == {200: len(result.blocks)} and result.errors == 0
    assert len(result.blocks) > 50
    # One process would hand out 1..N without a hole; each of several holds a range of its own, partly used.
    assert max(numbers) - min(numbers) + 1 > len(numbers)


@pytest.mark.parametrize("kind", ["gunicorn", "fast"])
def test_a_worker_killed_mid_run_costs_a_gap_never_a_repeat(servers, kind):
    server = servers[kind]
    token = make_client(max_count=100)
    name = fresh(f"killed-{kind}")
    killed: list[int] = []

    def kill_one() -> None:
        pid = server.worker_pids()[0]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    result = load(server.url + name + "/next", token, clients=20, seconds=4, during=kill_one)
    assert killed and killed[0] not in server.worker_pids()
    assert_unique(result.numbers())
    # The killed worker's requests in flight fail (the client retries them); every answer is 200.
    assert set(result.statuses) == {200} and len(result.blocks) > 50
    deadline = time.monotonic() + 10
    while len(server.worker_pids()) < server.workers and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(server.worker_pids()) == server.workers  # the master started another worker
    assert call(server.url + name + "/next", {"count": 1}, token)[0] == 200


# Every answer, over the wire


@pytest.mark.parametrize("kind", KINDS)
def test_security_answers(servers, kind):
    url = servers[kind].url
    token = make_client(max_count=10, rate="")
    limited = make_client("limited", rate="2/m")
    name = fresh(kind)
    wrong = [None, "", token[:-1], token[:-3] + "abc", "ssq_" + "A" * 43, token.upper()]
    answers = [call(url + name + "/next", {"count": 1}, bad) for bad in wrong]
    assert {status for status, _, _ in answers} == {401}
    assert len({body for _, _, body in answers}) == 1
    status, _, body = call(url + "invoice/next", {"count": 1}, token)
    assert status == 403 and json.loads(body)["error"] == "forbidden"
    status, _, body = call(url + name + "/next", {"count": 11}, token)
    assert status == 400 and json.loads(body)["field"] == "count"
    statuses = [call(url + name + "/next", None, limited) for _ in range(3)]
    assert [status for status, _, _ in statuses] == [200, 200, 429]
    assert 1 <= int(statuses[-1][1]["Retry-After"]) <= 60
    status, headers, body = call(url + name + "/next", None, token, method="GET")
    assert status == 405 and headers["Allow"] == "POST" and json.loads(body)["error"] == "method_not_allowed"
    status, _, body = call(url + "no/such/thing", None, token)
    assert status == 404 and json.loads(body)["error"] == "not_found"


@pytest.mark.parametrize("kind", KINDS)
def test_503_with_retry_after_while_the_row_stays_locked(servers, kind, backend):
    if backend == "sqlite":
        pytest.skip("SQLite locks the whole file; the lock is held on a row elsewhere")
    from django.db import transaction

    from django_segment_seq.models import Sequence

    token = make_client()
    name = fresh(kind)
    Sequence.objects.create(name=name)
    with transaction.atomic():
        Sequence.objects.select_for_update().get(name=name)
        status, headers, body = call(servers[kind].url + name + "/next", {"count": 1}, token, timeout=30)
    assert status == 503 and int(headers["Retry-After"]) >= 1
    assert b"Traceback" not in body and json.loads(body)["error"] == "unavailable"
    assert call(servers[kind].url + name + "/next", {"count": 1}, token)[0] == 200


@pytest.mark.parametrize("kind", KINDS)
def test_health_and_the_openapi_document(servers, kind):
    from openapi_spec_validator import validate

    url = servers[kind].url
    assert json.loads(call(url + "health", method="GET")[2])["status"] == "ok"
    status, _, body = call(url + "openapi.json", method="GET")
    assert status == 200
    document = json.loads(body)
    validate(document)
    assert document["openapi"].startswith("3.1") and document["servers"] == [{"url": "/ids"}]
    documented = set(document["paths"]["/{name}/next"]["post"]["responses"])
    assert {"200", "400", "401", "403", "404", "405", "409", "429", "503"} <= documented


# Fuzz: whatever is sent, never a 500 and never a traceback

METHODS = st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "FOO", "post"])
SEGMENT = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="#?"), max_size=30)
PATHS = st.one_of(
    st.lists(SEGMENT, min_size=0, max_size=5).map(lambda parts: "/ids/" + "/".join(parts)),
    st.sampled_from(["/ids/order-fuzz/next", "/ids/fields/testapp.Parcel.code/next", "/ids/snowflake/classic/next"]),
    st.builds(lambda name, query: f"/ids/{name}/next?{query}", SEGMENT, SEGMENT),
)
BODIES = st.one_of(
    st.binary(max_size=200),
    st.builds(
        lambda value: json.dumps({"count": value}).encode(),
        st.one_of(st.integers(), st.floats(), st.text(), st.none(), st.booleans()),
    ),
    st.builds(
        lambda data: json.dumps(data).encode(),
        st.recursive(
            st.none() | st.integers() | st.text(),
            lambda kids: st.lists(kids) | st.dictionaries(st.text(), kids),
            max_leaves=10,
        ),
    ),
)
HEADERS = st.dictionaries(
    st.sampled_from(["Authorization", "Content-Type", "Cookie", "X-CSRFToken", "Accept", "X-Forwarded-For"]),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60),
)


@pytest.mark.parametrize("kind", KINDS)
def test_fuzz_never_a_500(servers, kind):
    token = make_client(sequences="*")
    port = servers[kind].port

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(method=METHODS, path=PATHS, headers=HEADERS, body=BODIES, authorized=st.booleans())
    def request(method: str, path: str, headers: dict[str, str], body: bytes, authorized: bool) -> None:
        if authorized:
            headers = {**headers, "Authorization": f"Bearer {token}"}
        status, answer = raw(port, method, path, headers, body)
        assert status < 500 or status == 503, (status, answer[:300])
        assert b"Traceback" not in answer and b'File "' not in answer

    request()


# The Python client


def test_remote_sequence_against_the_live_server(servers):
    token = make_client(max_count=50)
    name = fresh("remote")
    sequences = [RemoteSequence(servers[kind].url, token, name, count=50) for kind in KINDS for _ in range(2)]
    numbers: list[int] = []
    lock = threading.Lock()

    def take(remote: RemoteSequence) -> None:
        got = [remote.next() for _ in range(300)]  # blocks from several server processes: unique, not in order
        with lock:
            numbers.extend(got)

    threads = [threading.Thread(target=take, args=(remote,)) for remote in sequences]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert_unique(numbers, 300 * len(sequences))

    with pytest.raises(RemoteError) as refused:
        RemoteSequence(servers["gunicorn"].url, token, "invoice").next()
    assert refused.value.status == 403


def test_remote_sequence_waits_for_a_server_that_goes_away_and_comes_back(servers, tmp_path):
    server = LiveServer("gunicorn", servers["gunicorn"].env, tmp_path / "again.log", workers=2)
    server.start()
    try:
        token = make_client(max_count=10)
        name = fresh("away")
        remote = RemoteSequence(server.url, token, name, count=10, timeout=2, retries=8, backoff=0.25, max_wait=1)
        before = [remote.next() for _ in range(25)]
        server.stop()
        gone = RemoteSequence(server.url, token, name, count=10, timeout=1, retries=1, backoff=0.05)
        with pytest.raises(RemoteUnavailable):
            gone.next()
        restart = threading.Timer(1.0, server.start)
        restart.start()
        after = [remote.next() for _ in range(30)]  # the block in memory, then retries until the server is back
        restart.join(timeout=60)
        assert_unique(before + after, 55)
        assert after[-1] > before[-1]
    finally:
        server.stop()


def test_servers_leave_no_process_behind(servers, tmp_path):
    server = LiveServer("uvicorn", servers["uvicorn"].env, tmp_path / "short.log", workers=2)
    server.start()
    assert len(server.live_in_group()) >= 3  # the manager and its two workers
    server.stop()
    assert server.live_in_group() == []
