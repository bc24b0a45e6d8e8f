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
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_segment_seq.models import Sequence
from django_segment_seq.service.models import Client
from django_segment_seq.service.remote import RemoteError, RemoteSequence, RemoteUnavailable
from django_segment_seq.service.tokens import digest, new_token, shown_part
from tests.conftest import assert_unique, worker_env
from tests.support.id_service import LiveServer, call, load, raw
from tests.support.windows import room_in_window, window_of

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]
KINDS = ["gunicorn", "uvicorn", "fast"]
CONTRACT_MAX_COUNT = 1000
# Seconds left in a rate's window at least before a test's requests counted in it exactly (three calls to a server).
ROOM = 10


@pytest.fixture(scope="module")
def servers(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[dict[str, LiveServer]]:
    """The servers on the test database, started once for the module and stopped at its end, failed or not."""
    folder = tmp_path_factory.mktemp("id_service")
    with django_db_blocker.unblock():
        env = worker_env(
            SERVICE_CACHE_DIR=str(folder / "cache"), DJANGO_SETTINGS_MODULE="tests.service_project.settings"
        )
    # SERVICE_MAX_COUNT: the OpenAPI document's maximum count, twice what the contract test's client may take, so
    # the generator sends counts the document allows and the client may not (a declared 403 count_limit).
    env["SEGMENT_SEQ_TEST_SETTINGS"] = json.dumps(
        {"LOCK_TIMEOUT": 0.5, "CONNECTION_RETRIES": 2, "SERVICE_MAX_COUNT": CONTRACT_MAX_COUNT}
    )
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
    """A client that may create the fresh sequences the tests name (max_new_rows), unless told otherwise."""
    fields.setdefault("max_new_rows", 100)
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
    status, _, body = call(url + name + "/next", {"count": 11}, token)  # within the document's maximum
    assert status == 403 and json.loads(body)["error"] == "count_limit"
    status, _, body = call(url + name + "/next", {"count": CONTRACT_MAX_COUNT + 1}, token)  # beyond it
    assert status == 400 and json.loads(body)["field"] == "count"
    window = room_in_window(60, ROOM)  # the three in one minute's window, as the service counts it
    statuses = [call(url + name + "/next", None, limited) for _ in range(3)]
    assert window_of(60) == window, f"three requests took more than {ROOM} s"
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
    assert document["openapi"].startswith("3.1") and document["servers"][0]["url"] == url.rstrip("/")
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
        status, answer = raw(port, method, path, headers, body, source="127.0.0.3")  # its 401s counted apart
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


# Trust: what a client reaches, which names enter, what refusals cost, how bad input and outages are answered


@pytest.mark.parametrize("kind", KINDS)
def test_only_plain_rows_that_exist_over_the_wire(servers, kind):
    from tests.testapp.models import DailyOrder, GaplessInvoice

    url = servers[kind].url
    token = make_client("partner", "order*,daily-order*,gapless-invoice*,counted-*,partner-*", max_new_rows=0)
    DailyOrder.objects.create()
    GaplessInvoice.objects.create()
    derived = list(Sequence.objects.exclude(base_name=None).values_list("name", flat=True))
    before = dict(Sequence.objects.values_list("name", "value"))
    for name in [*derived, "daily-order", "gapless-invoice", "counted-invoice", "daily-order@2099-01-01"]:
        status, _, body = call(url + name + "/next", {"count": 1}, token)
        assert status == 403 and json.loads(body)["error"] == "not_plain", (name, body)
    status, _, body = call(url + fresh("partner") + "/next", {"count": 1}, token)
    assert status == 404 and json.loads(body)["error"] == "not_found"
    assert dict(Sequence.objects.values_list("name", "value")) == before


@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_first_requests_for_new_rows_all_succeed_and_count_each_row_once(servers, kind):
    """Callers of a client that may create 2 rows ask, all at once from every worker, for 2 new names (on MariaDB
    spelt 4 ways each, which its collation takes for one row): every request is served, and 2 rows are counted."""
    url, maker = servers[kind].url, fresh("maker")
    token = make_client(maker, "order-made-*,ORDER-MADE-*,Order-Made-*,ördér-mädé-*", max_new_rows=2)
    names = [fresh("made-a").lower(), fresh("made-b").lower()]
    spellings = [name.upper() for name in names] + [name.title() for name in names]
    if connection.vendor == "mysql":
        spellings += [name.replace("order-made", "ördér-mädé") for name in names]
    asked = [name for name in names for _ in range(3)] + (spellings if connection.vendor == "mysql" else names * 3)
    answers: list[tuple[str, int, bytes]] = []
    start = threading.Barrier(len(asked))

    def one(name: str) -> None:
        start.wait(10)
        status, _, body = call(url + quote(name) + "/next", {"count": 5}, token, timeout=30)
        answers.append((name, status, body))

    threads = [threading.Thread(target=one, args=(name,)) for name in asked]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(answers) == len(asked) and {status for _, status, _ in answers} == {200}, answers
    assert Client.objects.get(name=maker).rows_created == 2
    rows = Sequence.objects.filter(name__in=names)  # as the database compares: whichever spelling came first
    assert rows.count() == 2 and not Sequence.objects.filter(name__in=spellings).exclude(pk__in=rows).exists()
    for row in rows:  # every spelling took from the one row: no number twice
        taken = [json.loads(body) for name, _, body in answers if Sequence.objects.get(name=name).pk == row.pk]
        assert len(taken) == len(asked) // 2
        assert_unique([number for block in taken for number in range(block["first"], block["last"] + 1)])


@pytest.mark.parametrize("kind", KINDS)
def test_a_forged_log_line_is_a_400_and_never_logged(servers, kind):
    server = servers[kind]
    token = make_client("forger", "order*")
    forged = "order%0AID%20service%3A%20admin%20took%201000000%20of%20order%3A%201-1000000"
    for name in (forged, "order%0D%1B%5B31m", "order%20", "%20order", "order%00x", ".."):
        status, body = raw(server.port, "POST", f"/ids/{name}/next", {"Authorization": f"Bearer {token}"}, b"")
        assert status in (400, 404) and b"Traceback" not in body, (name, status, body)
        assert status == 404 or json.loads(body)["field"] == "name"
    time.sleep(0.2)  # the server's log lines are written by its own processes
    assert "ID service: admin" not in server.log.read_text()


@pytest.mark.parametrize("kind", KINDS)
def test_the_rate_holds_on_a_shared_file_cache_under_concurrency(servers, kind):
    token = make_client("racer", rate="30/h")
    name = fresh("racer")
    Sequence.objects.create(name=name)
    started = time.time()
    statuses = concurrent_statuses(servers[kind].url + name + "/next", token, threads=24, each=8)
    windows = int(time.time() // 3600) - int(started // 3600) + 1
    assert statuses.get(200, 0) == 30 * windows or (windows > 1 and statuses.get(200, 0) <= 30 * windows), statuses
    assert set(statuses) == {200, 429}


def concurrent_statuses(url: str, token: str, threads: int, each: int) -> dict[int, int]:
    """`threads` callers at once, `each` requests apiece: how many got each status."""
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def caller() -> None:
        start.wait(10)
        for _ in range(each):
            status = call(url, {"count": 1}, token, timeout=15)[0]
            with lock:
                statuses[status] = statuses.get(status, 0) + 1

    workers = [threading.Thread(target=caller) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert not worker.is_alive(), "a caller hung"
    return statuses


@pytest.mark.parametrize(("kind", "source"), [("gunicorn", "127.0.0.4"), ("uvicorn", "127.0.0.5")])
def test_refusals_are_limited_too(servers, kind, source):
    port = servers[kind].port
    prober = make_client("prober", "order*", rate="5/h")
    hour = room_in_window(3600, ROOM)
    forbidden = [
        raw(port, "POST", "/ids/invoice/next", {"Authorization": f"Bearer {prober}"}, b"")[0] for _ in range(7)
    ]
    assert window_of(3600) == hour, f"seven requests took more than {ROOM} s"
    assert forbidden == [403] * 5 + [429] * 2
    minute = room_in_window(60, ROOM)  # 32 guesses straddling a minute's end are counted in two windows: all 401
    guesses = [
        raw(port, "POST", "/ids/order/next", {"Authorization": "Bearer ssq_" + "G" * 43}, b"", source)
        for _ in range(32)
    ]
    assert window_of(60) == minute, f"32 requests took more than {ROOM} s"
    assert [status for status, _ in guesses] == [401] * 30 + [429] * 2  # SERVICE_AUTH_FAILURE_RATE's 30/m
    assert json.loads(guesses[-1][1])["error"] == "rate_limited"


@pytest.mark.parametrize("kind", KINDS)
def test_bad_input_is_a_400_naming_the_field_over_the_wire(servers, kind):
    url, port = servers[kind].url, servers[kind].port
    token = make_client("careless", "order*")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-www-form-urlencoded"}
    for count in ("%C2%B2", "%C2%B9%E2%81%B0", "%D9%A3"):  # "²", "¹⁰", "٣"
        status, body = raw(port, "POST", f"/ids/order/next?count={count}", headers, b"")
        assert status == 400 and json.loads(body)["field"] == "count", (count, body)
        status, body = raw(port, "POST", "/ids/order/next", headers, f"count={count}".encode())
        assert status == 400 and json.loads(body)["field"] == "count", (count, body)
    headers["Content-Type"] = "application/json"
    status, body = raw(port, "POST", "/ids/order/next", headers, b"[" * 100_000)
    assert status == 400 and json.loads(body)["field"] == "body"
    status, _, body = call(url + "order%00/next", {"count": 1}, token)
    assert status == 400 and json.loads(body)["field"] == "name"


@pytest.mark.parametrize("kind", KINDS)
def test_a_database_outage_is_one_warning_not_a_traceback_per_request(servers, kind, backend, tmp_path):
    from tests.support.servers import free_port

    env = dict(servers[kind].env)
    if backend == "sqlite":
        env["SEGMENT_SEQ_TEST_DB_NAME"] = str(tmp_path / "no" / "such" / "folder.sqlite3")
    else:  # the same server and database, at a port nothing listens on
        url = {"mariadb": "mysql://root@127.0.0.1:{}/test", "postgres": "postgres://postgres@127.0.0.1:{}/test"}
        env[f"SEGMENT_SEQ_TEST_{backend.upper()}_URL"] = url[backend].format(free_port())
    server = LiveServer(kind, env, tmp_path / f"{kind}.log", workers=2, ready=503)
    server.start()
    try:
        token = new_token()
        answers = [call(server.url + "order/next", {"count": 1}, token) for _ in range(40)]
    finally:
        server.stop()
    assert {status for status, _, _ in answers} == {503}
    assert all(headers["Retry-After"] == "1" for _, headers, _ in answers)
    log = server.log.read_text()
    assert "Traceback" not in log, log[-3000:]
    assert 1 <= log.count("numbers cannot be handed out") <= 2, log[-3000:]  # once per worker process


@pytest.mark.parametrize("kind", KINDS)
def test_a_refusal_under_a_row_lock_comes_within_the_lock_timeout(servers, kind, backend, tmp_path):
    """The row locked while the next range is prefetched: the caller that runs out waits for that fetch, and is
    answered when it fails, not after a second wait of its own; on uvicorn, callers queued behind it too."""
    if backend == "sqlite":
        pytest.skip("SQLite locks the whole file; the lock is held on a row elsewhere")
    from django.db import transaction

    settings = {"LOCK_TIMEOUT": 2.0, "ADAPTIVE_STEP": False, "PREFETCH_AT": 0.2}
    env = {**servers[kind].env, "SEGMENT_SEQ_TEST_SETTINGS": json.dumps(settings)}
    server = LiveServer(kind, env, tmp_path / f"{kind}.log", workers=1)
    server.start()
    try:
        token = make_client("patient")
        name = fresh("locked")
        Sequence.objects.create(name=name, step=1000)
        url = server.url + name + "/next"
        assert call(url, {"count": 1}, token)[0] == 200  # a range of 1,000 cached, its prefetch due at 150-250
        with transaction.atomic():
            Sequence.objects.select_for_update().get(name=name)
            assert call(url, {"count": 300}, token)[0] == 200  # from the range; the prefetch starts, and waits
            callers = 3 if kind == "uvicorn" else 1  # gunicorn's one sync worker takes one request at a time
            timed = timed_calls(url, token, {"count": 800}, callers)
    finally:
        server.stop()
    assert [status for status, _ in timed] == [503] * callers
    assert max(seconds for _, seconds in timed) < 2.0 + 0.8, timed  # LOCK_TIMEOUT 2 s and a margin


def timed_calls(url: str, token: str, body: object, callers: int) -> list[tuple[int, float]]:
    """`callers` requests at once: each one's status and seconds."""
    results: list[tuple[int, float]] = []

    def one() -> None:
        started = time.monotonic()
        status = call(url, body, token, timeout=30)[0]
        results.append((status, time.monotonic() - started))

    threads = [threading.Thread(target=one) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@pytest.mark.parametrize("kind", KINDS)
def test_schemathesis_finds_nothing_against_the_live_server(servers, kind, tmp_path):
    """Every check of schemathesis, with a valid token, against the live server: a bounded run, no failure."""
    import subprocess  # only this test runs a command
    import sys

    token = make_client("contract", "*", max_count=CONTRACT_MAX_COUNT // 2, max_new_rows=0)
    command = [
        str(Path(sys.executable).with_name("st")),
        "run",
        servers[kind].url + "openapi.json",
        "--checks", "all",
        "--header", f"Authorization: Bearer {token}",
        "--max-examples", "10",
        "--phases", "examples,coverage,fuzzing",
        "--seed", "34",
        "--generation-database", "none",
        "--request-timeout", "10",
        "--workers", "1",  # 2 trips CPython 3.11's ast.parse, which Hypothesis calls from threads
    ]  # fmt: skip
    started = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    print(f"schemathesis ran {time.monotonic() - started:.1f} s:", run.stdout[-2500:])
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "No issues found" in run.stdout or " 0 failures" in run.stdout or "passed" in run.stdout, run.stdout[-3000:]


@pytest.mark.parametrize("kind", ["uvicorn", "fast"])
def test_a_held_row_holds_up_its_own_callers_only(kind, backend, django_db_blocker, tmp_path):
    """A row another session holds: each of its callers gets its 503 within LOCK_TIMEOUT, each waiting on a thread
    of its own, while the same worker goes on answering for a row nobody holds (gunicorn's sync worker serves one
    request at a time, so it has no such neighbour)."""
    if backend == "sqlite":
        pytest.skip("SQLite locks the whole file; the lock is held on a row elsewhere")
    from django.db import transaction

    with django_db_blocker.unblock():
        env = worker_env(DJANGO_SETTINGS_MODULE="tests.service_project.settings")
    env["SEGMENT_SEQ_TEST_SETTINGS"] = json.dumps({"LOCK_TIMEOUT": 1.0, "CONNECTION_RETRIES": 2})
    server = LiveServer(kind, env, tmp_path / f"{kind}.log", workers=1)
    server.start()
    free_waits: list[tuple[int, float]] = []
    try:
        token = make_client("neighbours")
        held, free = fresh("held"), fresh("free")
        Sequence.objects.create(name=held)
        Sequence.objects.create(name=free)
        assert call(server.url + free + "/next", {"count": 1}, token)[0] == 200
        holding = threading.Event()

        def ask_the_free_row() -> None:
            while holding.is_set():
                started = time.monotonic()
                status = call(server.url + free + "/next", {"count": 1}, token, timeout=30)[0]
                free_waits.append((status, time.monotonic() - started))

        with transaction.atomic():
            Sequence.objects.select_for_update().get(name=held)
            holding.set()
            neighbour = threading.Thread(target=ask_the_free_row)
            neighbour.start()
            try:
                timed = timed_calls(server.url + held + "/next", token, {"count": 1}, 8)
            finally:
                holding.clear()
                neighbour.join(40)
    finally:
        server.stop()
    assert [status for status, _ in timed] == [503] * 8, timed
    assert max(seconds for _, seconds in timed) < 1.0 + 1.0, timed  # LOCK_TIMEOUT 1 s and a margin
    assert free_waits and {status for status, _ in free_waits} == {200}, free_waits
    assert max(seconds for _, seconds in free_waits) < 1.5, free_waits
