"""The ID service in process (Django's test clients: sync and async views, and the fast path in front of Django):
every answer a caller can get."""

import contextlib
import json
import logging
import os
import re
import socket
import tempfile
import time
import uuid
from collections.abc import Iterator
from io import StringIO

import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.core.management import call_command
from django.test import AsyncClient
from django.test import Client as HttpClient

from django_segment_seq.models import Sequence
from django_segment_seq.service import fastpath
from django_segment_seq.service.models import Client
from tests.support.fast_client import FastClient, forget_application

pytestmark = pytest.mark.django_db(transaction=True)
# The sync views, the async views, and the fast path (under /ids/, in front of Django's ASGI application).
PREFIXES = ["/ids/", "/aids/", "fast"]
# Django's view and the fast path, for the tests that need not run on both kinds of view.
PATHS = ["/ids/", "fast"]


def client(prefix: str, **options: object) -> HttpClient:
    return FastClient(**options) if prefix == "fast" else HttpClient(**options)


def url(prefix: str, path: str) -> str:
    return ("/ids/" if prefix == "fast" else prefix) + path


def add_client(name: str = "shop", *extra: str) -> str:
    out = StringIO()
    call_command(
        "segment_seq",
        "client",
        "add",
        name,
        "--sequences",
        "order*,testapp.Parcel.code,snowflake:*",
        *extra,
        stdout=out,
    )
    return re.findall(r"ssq_\S+", out.getvalue())[-1]


def post(prefix: str, path: str, token: str | None, body: object = None, **headers: object):
    if token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    data = json.dumps(body) if body is not None else ""
    return client(prefix).post(url(prefix, path), data, content_type="application/json", **headers)


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.mark.parametrize("prefix", PREFIXES)
def test_block_is_contiguous_and_follows(prefix):
    token = add_client()
    first = post(prefix, "order/next", token, {"count": 10}).json()
    second = post(prefix, "order/next", token, {"count": 5}).json()
    assert first["name"] == "order" and first["last"] - first["first"] == 9 and first["count"] == 10
    assert second["first"] > first["last"] and second["last"] - second["first"] == 4
    assert second["first_text"] == str(second["first"])


def test_async_view_serves_from_the_cache():
    token = add_client()
    response = pytest.importorskip("asgiref.sync").async_to_sync(AsyncClient().post)(
        "/aids/order/next",
        json.dumps({"count": 3}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200 and response.json()["count"] == 3


@pytest.mark.parametrize("prefix", PREFIXES)
def test_count_from_form_and_query_and_default(prefix):
    token = add_client()
    form = client(prefix).post(url(prefix, "order/next"), {"count": "4"}, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert form.json()["count"] == 4
    query = client(prefix).post(url(prefix, "order/next?count=3"), HTTP_AUTHORIZATION=f"Bearer {token}")
    assert query.json()["count"] == 3
    assert post(prefix, "order/next", token).json()["count"] == 1


@pytest.mark.parametrize("prefix", PREFIXES)
def test_field_texts_by_label(prefix):
    token = add_client()
    body = post(prefix, "fields/testapp.Parcel.code/next", token, {"count": 3}).json()
    assert body["label"] == "testapp.Parcel.code"
    assert len(body["texts"]) == 3 and all(re.fullmatch(r"P\d{6}", text) for text in body["texts"])
    assert len(set(body["texts"])) == 3


@pytest.mark.parametrize("prefix", PREFIXES)
def test_snowflakes_as_numbers_and_strings(prefix):
    token = add_client()
    body = post(prefix, "snowflake/classic/next", token, {"count": 5}).json()
    assert body["id_texts"] == [str(value) for value in body["ids"]] and len(set(body["ids"])) == 5
    js = post(prefix, "snowflake/js53/next", token, {"count": 2}).json()
    assert all(value < 2**53 for value in js["ids"])
    assert post(prefix, "snowflake/nope/next", token).status_code == 404


@pytest.mark.parametrize("prefix", PATHS)
def test_scoped_and_gapless_fields_are_refused_with_400(prefix):
    out = StringIO()
    call_command("segment_seq", "client", "add", "all", "--sequences", "*", stdout=out)
    token = re.findall(r"ssq_\S+", out.getvalue())[-1]
    scoped = post(prefix, "fields/testapp.CompanyOrder.number/next", token)
    assert scoped.status_code == 400 and scoped.json()["field"] == "label"
    assert post(prefix, "fields/testapp.CountedInvoice.number/next", token).status_code == 400
    assert post(prefix, "fields/testapp.Nope.number/next", token).status_code == 404


# 401: the same answer whatever is wrong


@pytest.mark.parametrize("prefix", PREFIXES)
def test_401_is_one_answer_for_every_wrong_token(prefix):
    token = add_client()
    answers = [
        client(prefix).post(url(prefix, "order/next")),
        client(prefix).post(url(prefix, "order/next"), HTTP_AUTHORIZATION="Basic dXNlcjpwYXNz"),
        post(prefix, "order/next", ""),
        post(prefix, "order/next", token[:-1]),
        post(prefix, "order/next", token[:-4] + "AAAA"),
        post(prefix, "order/next", "ssq_" + "x" * 43),
        post(prefix, "order/next", token + "x"),
    ]
    assert {response.status_code for response in answers} == {401}
    assert len({response.content for response in answers}) == 1
    assert all(response["WWW-Authenticate"].startswith("Bearer") for response in answers)


@pytest.mark.parametrize("prefix", PATHS)
def test_revoked_token_gets_401(prefix):
    token = add_client()
    assert post(prefix, "order/next", token).status_code == 200
    call_command("segment_seq", "client", "revoke", "shop", stdout=StringIO())
    assert post(prefix, "order/next", token).status_code == 401


@pytest.mark.parametrize("prefix", PATHS)
def test_rotation_keeps_the_old_token_for_its_grace_only(prefix):
    old = add_client()
    out = StringIO()
    call_command("segment_seq", "client", "rotate", "shop", "--grace", "1h", stdout=out)
    new = re.findall(r"ssq_\S+", out.getvalue())[-1]
    assert post(prefix, "order/next", old).status_code == 200
    assert post(prefix, "order/next", new).status_code == 200
    call_command("segment_seq", "client", "rotate", "shop", "--grace", "0", stdout=out)
    newest = re.findall(r"ssq_\S+", out.getvalue())[-1]
    assert post(prefix, "order/next", new).status_code == 401
    assert post(prefix, "order/next", old).status_code == 401
    assert post(prefix, "order/next", newest).status_code == 200


@pytest.mark.usefixtures("minute_with_room")
@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_revoked_clients_failures_do_not_lock_out_the_valid_clients_on_its_address(prefix, settings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from django_segment_seq.service.authentication import known

    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "SERVICE_AUTH_FAILURE_RATE": "5/m"}
    first, second, revoked = add_client("first"), add_client("second"), add_client("revoked")
    call_command("segment_seq", "client", "revoke", "revoked", stdout=StringIO())
    statuses = [post(prefix, "order/next", revoked).status_code for _ in range(8)]
    assert statuses == [401] * 5 + [429] * 3  # the address is past its failures
    known.forget()  # as after KNOWN_FOR seconds, or in another process: the valid tokens are not remembered
    assert [post(prefix, "order/next", token).status_code for token in (first, second, first)] == [200] * 3
    with CaptureQueriesContext(connection) as queries:
        assert post(prefix, "order/next", revoked).status_code == 429
    assert queries.captured_queries == []  # a token found wrong lately is refused without reading the client table


def test_only_a_digest_is_stored():
    token = add_client()
    client = Client.objects.get(name="shop")
    stored = " ".join(str(value) for value in Client.objects.values_list().get(pk=client.pk))
    assert token not in stored and token[12:] not in stored
    assert token.startswith(client.token_start)


# 403, 400, 429, 405, 404


@pytest.mark.parametrize("prefix", PREFIXES)
def test_403_outside_the_patterns(prefix):
    token = add_client()
    response = post(prefix, "invoice/next", token)
    assert response.status_code == 403 and response.json()["error"] == "forbidden"
    assert post(prefix, "fields/testapp.Order.order_no/next", token).status_code == 403
    assert not Sequence.objects.filter(name="invoice").exists()


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"count": 10_001}, "count"),
        ({"count": 0}, "count"),
        ({"count": -5}, "count"),
        ({"count": "ten"}, "count"),
        ({"count": 2.5}, "count"),
        ({"count": True}, "count"),
        ({"count": None}, "count"),
        ([1, 2], "body"),
        ("text", "body"),
    ],
)
def test_400_names_the_field(prefix, body, field):
    token = add_client()
    response = post(prefix, "order/next", token, body)
    assert response.status_code == 400
    assert response.json()["field"] == field and field in response.json()["detail"]


@pytest.mark.parametrize("prefix", PATHS)
def test_400_for_a_body_that_is_not_json_and_a_long_name(prefix):
    token = add_client()
    response = client(prefix).post(
        url(prefix, "order/next"), b"{nope", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 400 and response.json()["field"] == "body"
    long_name = post(prefix, "order" + "x" * 120 + "/next", token)
    assert long_name.status_code == 400 and long_name.json()["field"] == "name"


@pytest.mark.parametrize("prefix", PATHS)
def test_max_count_is_the_clients(prefix):
    token = add_client("small", "--max-count", "5")
    assert post(prefix, "order/next", token, {"count": 5}).status_code == 200
    above = post(prefix, "order/next", token, {"count": 6})
    assert above.status_code == 403 and above.json()["error"] == "count_limit" and "at most 5" in above.json()["detail"]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_count_the_document_allows_above_the_clients_is_a_declared_refusal_not_a_400(prefix):
    """The document's maximum is SERVICE_MAX_COUNT: a count up to it is well formed, whatever this client may take."""
    token = add_client("contract", "--max-count", "1000")
    document = client(prefix).get(url(prefix, "openapi.json")).json()
    assert document["components"]["schemas"]["Count"]["properties"]["count"]["maximum"] == 10_000
    paths = {"order/next": "/{name}/next", "fields/testapp.Parcel.code/next": "/fields/{label}/next"}
    paths["snowflake/classic/next"] = "/snowflake/{layout}/next"
    for path, operation in paths.items():
        response = post(prefix, path, token, {"count": 9999})
        assert response.status_code == 403 and response.json()["error"] == "count_limit", (path, response.content)
        declared = document["paths"][operation]["post"]["responses"]["403"]["description"]
        assert "count_limit" in declared


@pytest.mark.usefixtures("minute_with_room")
@pytest.mark.parametrize("prefix", PREFIXES)
def test_429_past_the_rate_with_retry_after(prefix):
    token = add_client("limited", "--rate", "3/m")
    statuses = [post(prefix, "order/next", token).status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429]
    response = post(prefix, "order/next", token)
    assert 1 <= int(response["Retry-After"]) <= 60 and response.json()["retry_after"] == int(response["Retry-After"])


@pytest.mark.usefixtures("minute_with_room")
@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_request_for_a_new_name_is_counted_once_against_the_rate(prefix):
    # The second request on: the caller is known, so the fast path starts admit() on the loop, where the row's
    # check reaches for the database and admit() runs again on the sync thread; the rate is counted once.
    token, fresh = add_client("new-names", "--rate", "4/m", "--create-rows", "10"), uuid.uuid4().hex[:8]
    statuses = [post(prefix, f"order-{fresh}-{index}/next", token).status_code for index in range(5)]
    assert statuses == [200, 200, 200, 200, 429]


@pytest.mark.usefixtures("minute_with_room")
@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_rate_holds_for_requests_answered_from_a_remembered_admission(prefix):
    token = add_client("repeating", "--rate", "5/m")
    statuses = [post(prefix, "order/next", token, {"count": 2}).status_code for _ in range(7)]
    assert statuses == [200] * 5 + [429] * 2
    other = add_client("unrated")  # a client without a rate is not held back by another's count
    assert {post(prefix, "order/next", other, {"count": 2}).status_code for _ in range(7)} == {200}


def test_a_rated_clients_repeated_request_is_admitted_without_a_django_request(monkeypatch):
    built = []

    class Counted(fastpath.ASGIRequest):
        def __init__(self, *args, **kwargs):
            built.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(fastpath, "ASGIRequest", Counted)
    token = add_client("rated", "--rate", "1000/s")
    for _ in range(2):
        assert post("fast", "order/next", token, {"count": 3}).status_code == 200
    before = len(built)
    assert {post("fast", "order/next", token, {"count": 3}).status_code for _ in range(5)} == {200}
    assert len(built) == before


# What Django refuses before a view runs, the fast path refuses the same way (it leaves such a request to Django).


@pytest.fixture
def guarded(settings):
    """A project whose middleware checks every request's host and redirects plain HTTP when told to."""
    settings.MIDDLEWARE = [
        "django.middleware.security.SecurityMiddleware",
        "django.middleware.common.CommonMiddleware",
        *settings.MIDDLEWARE,
    ]
    forget_application()  # Django's handler loads the middleware once
    yield settings
    forget_application()


def test_a_host_django_refuses_is_refused_on_the_fast_path(guarded):
    token = add_client()
    hosts = ["evil.example", "127.0.0.1:16800@x", "testserver", "testserver:8000", "[::1", "testserver."]
    answers = {
        prefix: [post(prefix, "order/next", token, HTTP_HOST=host).status_code for host in hosts] for prefix in PATHS
    }
    assert answers["fast"] == answers["/ids/"]
    assert answers["fast"][:2] == [400, 400] and answers["fast"][2] == 200


def test_plain_http_is_redirected_on_the_fast_path_as_by_django(guarded):
    guarded.SECURE_SSL_REDIRECT = True
    token = add_client()
    plain = {prefix: post(prefix, "order/next", token) for prefix in PATHS}
    assert [plain[prefix].status_code for prefix in PATHS] == [301, 301]
    assert plain["fast"]["Location"] == plain["/ids/"]["Location"]
    secure = [post(prefix, "order/next", token, secure=True).status_code for prefix in PATHS]
    assert secure == [200, 200]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_405_and_404_in_json(prefix):
    token = add_client()
    for method in ("get", "put", "delete", "patch"):
        response = getattr(client(prefix), method)(url(prefix, "order/next"), HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 405 and response.json()["error"] == "method_not_allowed"
        assert response["Allow"] == "POST"
    for path in ("nope", "order/next/more", "order", "a/b/c/d", ""):
        response = client(prefix).post(url(prefix, path))
        assert response.status_code == 404 and response.json()["error"] == "not_found"


@pytest.mark.parametrize("prefix", PREFIXES)
def test_503_with_retry_after_when_numbers_cannot_be_handed_out(prefix, monkeypatch):
    from django_segment_seq.exceptions import SequenceUnavailable
    from django_segment_seq.service import handout

    token = add_client()

    def unavailable(*args, **kwargs):
        raise SequenceUnavailable("order", "default", 5, OSError("connection refused"))

    monkeypatch.setattr(handout, "next_values", unavailable)
    monkeypatch.setattr(handout, "anext_values", pytest.importorskip("asgiref.sync").sync_to_async(unavailable))
    from django_segment_seq import clear_cache

    clear_cache()
    response = post(prefix, "order/next", token)
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert "Traceback" not in response.content.decode()


@pytest.mark.parametrize("prefix", PATHS)
def test_409_when_the_sequence_is_exhausted(prefix):
    token = add_client()
    Sequence.objects.create(name="order-small", max_value=3, step=1)
    assert post(prefix, "order-small/next", token, {"count": 3}).status_code == 200
    response = post(prefix, "order-small/next", token)
    assert response.status_code == 409 and response.json()["error"] == "exhausted"


# sessions


@pytest.mark.parametrize("prefix", PATHS)
def test_session_user_needs_the_permission_and_csrf(prefix):
    user = User.objects.create_user("clerk", password="pw")
    browser = client(prefix, enforce_csrf_checks=True)
    browser.force_login(user)
    assert browser.post(url(prefix, "order/next")).status_code == 401
    user.user_permissions.add(Permission.objects.get(codename="use_id_service"))
    browser = client(prefix, enforce_csrf_checks=True)
    browser.force_login(User.objects.get(pk=user.pk))
    refused = browser.post(url(prefix, "order/next"))
    assert refused.status_code == 403 and refused.json()["error"] == "csrf"
    browser.get(url(prefix, "health"))  # any page; the token comes from the cookie set below
    from django.middleware.csrf import _get_new_csrf_string

    secret = _get_new_csrf_string()
    browser.cookies["csrftoken"] = secret
    allowed = browser.post(url(prefix, "order/next"), HTTP_X_CSRFTOKEN=secret)
    assert allowed.status_code == 200 and allowed.json()["count"] == 1


# health, usage, the command


@pytest.mark.parametrize("prefix", PREFIXES)
def test_health(prefix):
    response = client(prefix).get(url(prefix, "health"))
    assert response.status_code == 200 and response.json()["status"] == "ok"
    assert client(prefix).post(url(prefix, "health")).status_code == 405


@pytest.mark.parametrize("prefix", PATHS)
def test_usage_is_counted_and_listed(prefix, monkeypatch):
    from django_segment_seq.service import tallies
    from django_segment_seq.service.kept_thread import usage_thread

    monkeypatch.setattr(tallies, "FLUSH_EVERY", 0)
    token = add_client()
    post(prefix, "order/next", token, {"count": 7})
    post(prefix, "order/next", token, {"count": 3})
    usage_thread.wait()  # the fast path's writes, made after its answers
    tallies.usage.flush()
    client = Client.objects.get(name="shop")
    assert (client.requests, client.numbers) == (2, 10) and client.last_used_at is not None
    out = StringIO()
    call_command("segment_seq", "client", "list", "--json", stdout=out)
    (row,) = json.loads(out.getvalue())
    assert row["requests"] == 2 and row["token"].startswith("ssq_") and len(row["token"]) < 20


@contextlib.contextmanager
def database_down() -> Iterator[None]:
    """The default database unreachable from this thread's connection (a folder that does not exist for SQLite, a
    port nothing listens on for a server), as in an outage; reachable again afterwards."""
    from django.db import connection

    kept = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = os.path.join(tempfile.gettempdir(), "no-such-folder", "down.sqlite3")
    else:
        with socket.create_server(("127.0.0.1", 0)) as closed:
            port = closed.getsockname()[1]  # free once closed: a connection there is refused at once
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(port))
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(kept)


@pytest.mark.parametrize("prefix", PATHS)
def test_an_outage_of_the_usage_writes_is_one_warning_line_without_a_traceback(prefix, monkeypatch, caplog):
    from django_segment_seq.service import tallies
    from django_segment_seq.service.kept_thread import usage_thread

    monkeypatch.setattr(tallies, "FLUSH_EVERY", 0)  # a write after (or before) every request
    token = add_client()
    assert post(prefix, "order/next", token).status_code == 200  # the token known, the range cached
    usage_thread.wait()  # the fast path's writes, made after its answers
    tallies.usage.flush()
    caplog.set_level(logging.DEBUG, logger="django_segment_seq.service")
    with database_down():
        usage_thread.close()  # its connection too: its next write opens one, which fails
        for _ in range(4):  # served from memory (the known token, the cached range); each write fails
            assert post(prefix, "order/next", token).status_code == 200
            usage_thread.wait()
            tallies.usage.flush()
    warnings = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(warnings) == 1, [record.getMessage() for record in warnings]  # before: one with a traceback per write
    assert "usage counts cannot be written" in warnings[0].getMessage() and "\n" not in warnings[0].getMessage()
    assert all(record.exc_info is None for record in caplog.records) and "Traceback" not in caplog.text
    assert caplog.text.count("(still) the usage counts cannot be written") >= 3  # the later writes failed too
    tallies.usage.flush()  # the database back: the counts kept through the outage are written
    assert "usage counts are written again" in caplog.text
    assert Client.objects.get(name="shop").requests == 5


def test_command_refuses_a_bad_rate_and_a_second_client_of_one_name():
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="rate"):
        add_client("x", "--rate", "fast")
    add_client("y")
    with pytest.raises(CommandError, match="name"):
        add_client("y")


@pytest.mark.parametrize("prefix", PATHS)
def test_each_block_is_logged_with_client_and_range(prefix, caplog):
    token = add_client()
    caplog.set_level("INFO", logger="django_segment_seq.service")
    body = post(prefix, "order/next", token, {"count": 4}).json()
    assert f"shop took 4 of order: {body['first']}-{body['last']}" in caplog.text


@pytest.mark.parametrize("prefix", PATHS)
def test_401_takes_the_same_time_whatever_part_of_the_token_is_right(prefix):

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from django_segment_seq.service.tallies import usage

    token = add_client()
    variants = {
        "none": None,
        "random": "ssq_" + "Q" * 43,
        "right start": token[:12] + "Q" * (len(token) - 12),
        "all but the last": token[:-1] + ("A" if token[-1] != "A" else "B"),
    }
    # The same work: one query of one shape for every wrong token (only the digest it looks for differs).
    usage.flush()  # counts of earlier tests in this process, written now rather than amid the queries counted
    shapes = {}
    for name, value in variants.items():
        with CaptureQueriesContext(connection) as queries:
            assert post(prefix, "order/next", value).status_code == 401
        shapes[name] = [re.sub(r"'[0-9a-f]{64}'|%s", "?", query["sql"]) for query in queries.captured_queries]
    assert (
        all(len(shape) == 1 for shape in shapes.values()) and len({tuple(shape) for shape in shapes.values()}) == 1
    ), shapes
    # And the same time, within what a busy machine's noise allows: the fastest of many tries of each.
    timings: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(40):  # interleaved, so a slower moment of the machine hits every variant alike
        for name, value in variants.items():
            started = time.perf_counter()
            post(prefix, "order/next", value)
            timings[name].append(time.perf_counter() - started)
    fastest = {name: min(values) for name, values in timings.items()}
    assert max(fastest.values()) < 2 * min(fastest.values()), fastest


@pytest.mark.parametrize("prefix", PREFIXES)
def test_metrics_count_requests_by_client_and_status(prefix, settings):
    pytest.importorskip("prometheus_client")
    from prometheus_client import REGISTRY

    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "METRICS": True}
    token = add_client()

    def sample(client: str, status: str) -> float:
        return (
            REGISTRY.get_sample_value("segment_seq_service_requests_total", {"client": client, "status": status}) or 0
        )

    before = (sample("shop", "200"), sample("-", "401"), sample("shop", "403"))
    post(prefix, "order/next", token)
    post(prefix, "order/next", "wrong")
    post(prefix, "invoice/next", token)
    assert (sample("shop", "200"), sample("-", "401"), sample("shop", "403")) == tuple(n + 1 for n in before)


def test_admin_shows_the_token_once_and_keeps_only_its_digest(admin_client):
    response = admin_client.post(
        "/admin/segment_seq_service/client/add/",
        {"name": "billing", "sequences": "invoice*", "max_count": 100, "rate": "10/s", "max_new_rows": 0},
    )
    # Shown on the page that answers the addition, carried by no cookie (Django's message storage is one).
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    token = re.findall(r"ssq_[\w-]+", response.content.decode())[0]
    cookies = " ".join(morsel.value for morsel in admin_client.cookies.values())
    assert token not in cookies and token[12:] not in cookies
    if "messages" in admin_client.cookies:  # signed and maybe compressed: read it as Django does
        from django.contrib.messages.storage.cookie import MessageSerializer
        from django.core.signing import get_cookie_signer

        stored = get_cookie_signer(salt="django.contrib.messages").unsign_object(
            admin_client.cookies["messages"].value, serializer=MessageSerializer
        )
        assert token[12:] not in str(stored)
    assert token not in admin_client.get("/admin/segment_seq_service/client/").content.decode()
    client = Client.objects.get(name="billing")
    assert client.token_digest != token and token.startswith(client.token_start)
    assert post("/ids/", "invoice/next", token).status_code == 200
    change = admin_client.get(f"/admin/segment_seq_service/client/{client.pk}/change/").content.decode()
    assert token not in change and client.token_start in change
    assert 'name="token_start"' not in change and 'name="token_digest"' not in change  # shown, never an input
    bad = admin_client.post(
        "/admin/segment_seq_service/client/add/",
        {"name": "x", "sequences": "a", "max_count": 1, "rate": "often", "max_new_rows": 0},
    )
    assert bad.status_code == 200 and "is not a rate" in bad.content.decode()


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_body_past_djangos_upload_limit_is_a_400_naming_the_body(prefix, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    token = add_client()
    response = post(prefix, "order/next", token, {"count": 1, "padding": "x" * 2000})
    assert response.status_code == 400 and response.json()["field"] == "body"


def test_the_fast_path_passes_on_what_it_cannot_read_as_django_would():
    from asgiref.sync import async_to_sync

    from tests.support.fast_client import application, exchange

    token = add_client()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/ids/order/next",
        "root_path": "",
        "query_string": b"count=\xff",  # not UTF-8: ASGIRequest cannot decode it
        "headers": [(b"authorization", f"Bearer {token}".encode()), (b"content-length", b"0")],
    }
    sent = async_to_sync(exchange)(application(), scope, b"")
    assert sent[0]["status"] == 400  # Django's own answer to a query it cannot decode, not a traceback
    chunked = {**scope, "query_string": b"", "headers": [*scope["headers"][:1], (b"transfer-encoding", b"chunked")]}
    sent = async_to_sync(exchange)(application(), chunked, b'{"count": 2}')
    assert sent[0]["status"] == 200 and json.loads(sent[1]["body"])["count"] == 2  # through Django's view


def test_the_fast_path_remembers_an_admission_only_while_the_token_is_known():
    """The same request again is admitted from memory; a client saved (revoked, its patterns or count changed)
    is judged anew at once in this process, as its token is."""
    token = add_client("kept", "--max-count", "5")
    assert [post("fast", "order/next", token, {"count": 5}).status_code for _ in range(3)] == [200, 200, 200]
    client = Client.objects.get(name="kept")
    client.max_count = 4
    client.save()
    response = post("fast", "order/next", token, {"count": 5})
    assert response.status_code == 403 and response.json()["error"] == "count_limit"
    client.sequences = "invoice*"
    client.save()
    assert post("fast", "order/next", token, {"count": 1}).status_code == 403
    client.sequences = "order*"
    client.save()
    assert post("fast", "order/next", token, {"count": 1}).status_code == 200
    call_command("segment_seq", "client", "revoke", "kept", stdout=StringIO())
    assert post("fast", "order/next", token, {"count": 1}).status_code == 401
