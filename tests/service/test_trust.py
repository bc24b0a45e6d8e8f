"""The ID service as an attacker and a careful operator see it, in process: which rows a client reaches, which
rows it may create, which names enter at all, what refusals cost and how bad input is answered."""

import json
import logging
import re
import threading
from collections.abc import Callable
from io import StringIO
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection
from django.test import Client as HttpClient
from django.test.utils import CaptureQueriesContext

from django_segment_seq import next_value, sequence_stats
from django_segment_seq.db.rownames import validate_sequence_name
from django_segment_seq.models import Sequence
from django_segment_seq.service import collation as collation_module
from django_segment_seq.service import rows
from django_segment_seq.service.models import Client
from tests.conftest import assert_unique
from tests.support.fast_client import FastClient
from tests.support.windows import room_in_window, window_of
from tests.testapp.models import Company, CompanyOrder, DailyOrder, GaplessInvoice

pytestmark = pytest.mark.django_db(transaction=True)
PREFIXES = ["/ids/", "/aids/"]
# Django's views and the fast path in front of them.
PATHS = ["/ids/", "/aids/", "fast"]
# MariaDB's collations the name column may have: the server's default, and the one the suite's database has.
COLLATIONS = ["utf8mb4_general_ci", "utf8mb4_unicode_ci"]


def add_client(
    name: str = "partner", sequences: str = "order*,daily-order*,gapless-invoice*,counted-*,company-*", *extra: str
) -> str:
    out = StringIO()
    call_command("segment_seq", "client", "add", name, "--sequences", sequences, *extra, stdout=out)
    return re.findall(r"ssq_\S+", out.getvalue())[-1]


def post(prefix: str, path: str, token: str | None, body: object = None, **headers: str):
    """A request to the views under `prefix`, or to the fast path in front of /ids/ ("fast")."""
    if token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    data = json.dumps(body) if body is not None else ""
    client, url = (FastClient(), "/ids/" + path) if prefix == "fast" else (HttpClient(), prefix + path)
    return client.post(url, data, content_type="application/json", **headers)


@pytest.fixture
def name_collation(request):
    """On MariaDB, the name column under the collation given (and as it was afterwards); elsewhere, names compare
    byte for byte whatever the parameter, so the test runs once."""
    collation = request.param
    if connection.vendor != "mysql":
        if collation != COLLATIONS[-1]:
            pytest.skip("a MariaDB collation; names compare byte for byte here")
        yield None
        return
    table = Sequence._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT collation_name, column_type FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name = %s AND column_name = 'name'",
            [table],
        )
        before, column_type = cursor.fetchone()
        cursor.execute(
            f"ALTER TABLE {table} MODIFY name {column_type} CHARACTER SET utf8mb4 COLLATE {collation} NOT NULL"
        )
    collation_module.forget()
    try:
        yield collation
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {table}")  # names one collation tells apart may be one name to the other
            cursor.execute(
                f"ALTER TABLE {table} MODIFY name {column_type} CHARACTER SET utf8mb4 COLLATE {before} NOT NULL"
            )
        collation_module.forget()


def database_takes_for_a_fields_row(name: str, collation: str | None) -> bool:
    """Whether the database finds the gapless field's row for `name`, or takes it for a derived row's (with "@")."""
    if collation is None:
        return name == "gapless-invoice" or "@" in name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT CONVERT(%s USING utf8mb4) COLLATE {collation} = 'gapless-invoice' "
            f"OR CONVERT(%s USING utf8mb4) COLLATE {collation} LIKE '%%@%%'",
            [name, name],
        )
        return bool(cursor.fetchone()[0])


@pytest.fixture(autouse=True)
def fresh_state():
    cache.clear()
    rows.served_names.forget()
    yield
    cache.clear()
    rows.served_names.forget()


# 1. Plain rows only: never a row a field derives, numbers gaplessly or derives from, whatever its name


@pytest.mark.parametrize("prefix", PREFIXES)
def test_rows_fields_derive_or_number_gaplessly_are_refused(prefix):
    token = add_client()
    daily = DailyOrder.objects.create().order_no
    invoice = GaplessInvoice.objects.create().number
    company = Company.objects.create(code="c1")
    CompanyOrder.objects.create(company=company)
    derived = list(Sequence.objects.exclude(base_name=None).values_list("name", flat=True))
    assert any(name.startswith("daily-order@") for name in derived) and len(derived) >= 3
    before = dict(Sequence.objects.values_list("name", "value"))
    names = [*derived, "daily-order", "gapless-invoice", "counted-invoice", "company-order", "daily-order@2099-01-01"]
    for name in names:
        response = post(prefix, f"{name}/next", token)
        assert response.status_code == 403 and response.json()["error"] == "not_plain", (name, response.content)
    assert dict(Sequence.objects.values_list("name", "value")) == before  # nothing taken, nothing created
    assert DailyOrder.objects.create().order_no == daily[:-6] + f"{int(daily[-6:]) + 1:06d}"
    assert GaplessInvoice.objects.create().number[-5:] == f"{int(invoice[-5:]) + 1:05d}"


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_name_a_rule_made_in_code_derives_from_is_refused_as_a_fields_is(prefix):
    """The service sees a name as the rule does: "code-yearly" is a yearly rule's, though no field declares it."""
    token = add_client("coder", "code-*")
    response = post(prefix, "code-yearly/next", token)
    assert response.status_code == 403 and response.json()["error"] == "not_plain", response.content
    assert not Sequence.objects.filter(name="code-yearly").exists()


def test_a_pattern_admits_the_rows_the_database_finds_for_it():
    token = add_client("cased", "order-cased*")
    Sequence.objects.create(name="order-cased")
    first = post("/ids/", "order-cased/next", token, {"count": 5}).json()
    upper = post("/ids/", "ORDER-CASED/next", token, {"count": 5})
    if connection.vendor == "mysql":  # a case- and accent-insensitive collation: one row, one sequence of numbers
        assert upper.status_code == 200
        accented = post("/ids/", "ÖRDÉR-CASED/next", token, {"count": 5})
        assert accented.status_code == 200 and accented.json()["first"] > upper.json()["last"]
        assert_unique(
            [*range(first["first"], first["last"] + 1), *range(upper.json()["first"], upper.json()["last"] + 1)]
        )
        assert Sequence.objects.filter(name__in=["order-cased", "ORDER-CASED"]).count() == 1
    else:  # another row the pattern does not admit
        assert upper.status_code == 403
    trailing = post("/ids/", "order-cased%20/next", token)
    assert trailing.status_code == 400 and trailing.json()["field"] == "name"


# Look-alikes of the fields' rows: "ß" for "s" (general_ci), a full-width at sign for "@" (unicode_ci), case.
LOOK_ALIKES = ["gapleßs-invoice", "gapleß-invoice", "GAPLESS-INVOICE", "daily-order\uff202099-01-01"]


@pytest.mark.parametrize("prefix", PATHS)
@pytest.mark.parametrize("name_collation", COLLATIONS, indirect=True)
def test_a_look_alike_of_a_fields_row_is_refused_as_the_database_compares(prefix, name_collation):
    token = add_client("lookalike", "gaple*,GAPLE*,daily-order*", "--create-rows", "10")
    refused = []
    for name in LOOK_ALIKES:
        response = post(prefix, quote(name) + "/next", token)
        if database_takes_for_a_fields_row(name, name_collation):
            assert response.status_code == 403 and response.json()["error"] == "not_plain", (name, response.content)
            refused.append(name)
        else:  # a row of its own, which the client may create
            assert response.status_code == 200, (name, response.content)
    looser = {"utf8mb4_general_ci": "gapleßs-invoice", "utf8mb4_unicode_ci": "daily-order\uff202099-01-01"}
    if name_collation is not None:  # what Python's case folding misses and the collation finds: refused too
        assert looser[name_collation] in refused, refused
    assert not any(Sequence.objects.filter(name=name).exists() for name in refused)  # nothing made either
    assert GaplessInvoice.objects.create().number[-5:] == "00001"  # the field's first number is still its own


# 2. Rows that exist or a field declares; creating one needs the client's permission, within its cap


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_client_creates_rows_only_when_allowed_and_up_to_its_cap(prefix):
    token = add_client("reader", "partner-*")
    refused = post(prefix, "partner-new/next", token)
    assert refused.status_code == 404 and refused.json()["error"] == "not_found"
    assert not Sequence.objects.filter(name__startswith="partner-").exists()
    Sequence.objects.create(name="partner-existing")
    assert post(prefix, "partner-existing/next", token).status_code == 200
    maker = add_client("maker", "partner-*", "--create-rows", "2")
    statuses = [post(prefix, f"partner-made-{index}/next", maker).status_code for index in range(4)]
    assert statuses == [200, 200, 403, 403]
    assert Sequence.objects.filter(name__startswith="partner-made-").count() == 2
    assert Client.objects.get(name="maker").rows_created == 2
    assert post(prefix, "partner-made-0/next", maker).status_code == 200  # an existing row costs nothing


def test_a_field_declared_row_is_served_before_it_exists():
    token = add_client("orders", "order")
    assert not Sequence.objects.filter(name="order").exists()
    assert post("/ids/", "order/next", token).status_code == 200


def test_the_processes_memory_per_name_is_bounded(settings):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "SERVICE_CACHED_NAMES": 3}
    token = add_client("many", "bounded-*", "--create-rows", "10")
    taken = []
    for _round in range(2):
        for index in range(6):
            body = post("/ids/", f"bounded-{index}/next", token, {"count": 2}).json()
            taken += [(index, number) for number in range(body["first"], body["last"] + 1)]
        cached = [name for _alias, name in sequence_stats() if name.startswith("bounded-")]
        assert len(cached) <= 3, cached
    for index in range(6):
        assert_unique([number for name, number in taken if name == index], 4)


@pytest.mark.usefixtures("minute_with_room")
def test_session_users_have_a_rate(settings):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "SERVICE_USER_RATE": "3/m"}
    user = User.objects.create_user("clerk", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="use_id_service"))
    browser = HttpClient()
    browser.force_login(user)
    statuses = [browser.post("/ids/order/next").status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429]


# 3. One grammar of names, wherever a name enters; never a caller's text in a log line as it came


GOOD_NAMES = [
    "order",
    "order@2026",
    "ticket@company=1",
    "invoice@company=42,kind=bug/2026",
    "FY 2026",
    "číslo-№",
    "订单",
]
BAD_NAMES = [
    "order\nID service: admin",
    "a\rb",
    "\x1b[31mred",
    "..",
    ".",
    " order",
    "order ",
    "a\x00b",
    "a\tb",
    "\u202eevil",
    "a\u00a0",
]


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_names_the_app_makes_stay_valid(name):
    validate_sequence_name(name)
    assert next_value(name) >= 1


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_name_outside_the_grammar_enters_nowhere(name, admin_client):
    with pytest.raises(ValidationError):
        validate_sequence_name(name)
    with pytest.raises(ValueError, match="not allowed"):
        next_value(name)
    form = admin_client.post("/admin/django_segment_seq/sequence/add/", {"name": name, "step": 1000, "min_value": 1})
    if name.strip() != name:  # the admin's form strips the spaces at either end, as every Django text field does
        assert Sequence.objects.filter(name=name.strip()).exists()
    else:
        assert form.status_code == 200 and "not allowed" in form.content.decode()
    assert_every_stored_name_is_valid()


def assert_every_stored_name_is_valid() -> None:
    """Read back in Python: a NUL cannot even be sent to PostgreSQL, and MariaDB ignores trailing spaces."""
    for stored in Sequence.objects.values_list("name", flat=True):
        validate_sequence_name(stored)


def test_a_field_with_a_name_outside_the_grammar_fails_its_check():
    from django_segment_seq.fields import SequenceField
    from django_segment_seq.fields.checks.names import sequence_name_errors

    assert [error.id for error in sequence_name_errors(SequenceField("bad\nname"))] == ["django_segment_seq.E010"]
    assert sequence_name_errors(SequenceField("good-name")) == []


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_forged_log_line_is_refused_and_never_logged(prefix, caplog):
    token = add_client("forger", "*", "--create-rows", "5")
    caplog.set_level(logging.DEBUG, logger="django_segment_seq")
    path = "order%0AID%20service%3A%20admin%20took%201000000%20of%20order%3A%201-1000000/next"
    response = post(prefix, path, token)
    assert response.status_code == 400 and response.json()["field"] == "name"
    for quoted in ("a%0Db", "%1B%5B31mred", "..", "%20order", "order%20"):
        assert post(prefix, f"{quoted}/next", token).status_code in (400, 404), quoted
    assert not any(line.startswith("ID service: admin") for line in caplog.text.splitlines())
    assert_every_stored_name_is_valid()


def test_the_command_refuses_a_name_outside_the_grammar():
    from django.core.management import CommandError

    with pytest.raises((CommandError, ValueError)):
        call_command("segment_seq", "advance", "bad\nname", stdout=StringIO(), stderr=StringIO())
    assert not Sequence.objects.filter(name="bad\nname").exists()


# 4. Refusals count: a 403 against the rate; failed authentications per address, refused from the cache alone


@pytest.mark.usefixtures("minute_with_room")
def test_403s_count_against_the_rate():
    token = add_client("probe", "order*", "--rate", "3/m")
    statuses = [post("/ids/", "invoice/next", token).status_code for _ in range(5)]
    assert statuses == [403, 403, 403, 429, 429]


@pytest.mark.usefixtures("minute_with_room")
def test_failed_authentications_are_limited_and_a_wrong_token_is_read_once(settings):
    """Past its failures, an address's token is looked up once (it may be one made a moment ago elsewhere); a token
    found wrong lately is refused without reading the table."""
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "SERVICE_AUTH_FAILURE_RATE": "5/m"}
    token = add_client()
    statuses = [post("/ids/", "order/next", "ssq_" + "W" * 43).status_code for _ in range(5)]
    assert statuses == [401] * 5
    with CaptureQueriesContext(connection) as first:
        assert post("/ids/", "order/next", "ssq_" + "V" * 43).status_code == 429
    assert [query["sql"].split()[0] for query in first.captured_queries] == ["SELECT"]  # the token looked up
    with CaptureQueriesContext(connection) as queries:
        refused = post("/ids/", "order/next", "ssq_" + "V" * 43)
        assert post("/ids/", "order/next", "ssq_" + "W" * 43).status_code == 429
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert queries.captured_queries == []
    other = post("/ids/", "order/next", token, REMOTE_ADDR="10.0.0.2")  # another address is judged on its own
    assert other.status_code == 200


def written_elsewhere(name: str, rotate: str | None = None) -> str:
    """A client added (or `rotate`'s token rotated, the old one in its grace) as another process writes it: the row
    alone, without this process's signals, which would make it forget what it knows of the clients."""
    from datetime import timedelta

    from django.db.models import F
    from django.utils import timezone

    from django_segment_seq.service.tokens import digest, new_token, shown_part

    token = new_token()
    fields = {"token_start": shown_part(token), "token_digest": digest(token)}
    if rotate is None:
        Client.objects.bulk_create([Client(name=name, sequences="order*", **fields)])
    else:
        old = {"previous_digest": F("token_digest"), "previous_valid_until": timezone.now() + timedelta(hours=1)}
        Client.objects.filter(name=rotate).update(**old, **fields)
    return token


@pytest.mark.usefixtures("minute_with_room")
@pytest.mark.parametrize("prefix", PATHS)
def test_a_token_made_moments_ago_elsewhere_is_admitted_while_its_address_is_past_its_failures(prefix, settings):
    """A process past an address's failures judged its tokens by the live digests it read at most KNOWN_FOR before:
    a client added, or a token rotated, in another process since was answered 429 "Too many failed authentications"
    until then (every client behind one gateway). A token the table knows is admitted on its first request now."""
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "SERVICE_AUTH_FAILURE_RATE": "5/m"}
    rotated = add_client("rotated", "order*")
    wrong = [post(prefix, "order/next", "ssq_" + "W" * 43).status_code for _ in range(6)]
    assert wrong == [401] * 5 + [429]  # the address is past its failures
    assert post(prefix, "order/next", rotated).status_code == 200  # known to the process now
    added, new = written_elsewhere("added"), written_elsewhere("", rotate="rotated")
    assert post(prefix, "order/next", added).status_code == 200  # before: 429
    assert post(prefix, "order/next", new).status_code == 200  # before: 429
    assert post(prefix, "order/next", rotated).status_code == 200  # the old token, in its grace
    assert post(prefix, "order/next", "ssq_" + "X" * 43).status_code == 429  # a wrong token still is refused


def test_an_unknown_token_is_looked_up_once_however_many_requests_bring_it(monkeypatch):
    """Requests that bring a token the process does not know at once wait for one lookup of it, not each read the
    client table (before: one read per request)."""
    import time

    from django.db import connections

    from django_segment_seq.service import authentication

    token = add_client("burst", "order*")
    authentication.known.forget()
    reads, client_with = [], authentication.client_with

    def slow_read(token: str):
        reads.append(token)
        time.sleep(0.3)
        return client_with(token)

    monkeypatch.setattr(authentication, "client_with", slow_read)

    def caller() -> int | None:
        try:
            return None if authentication.client_caller(token, "10.0.0.9").name == "burst" else 1
        finally:
            connections.close_all()

    assert admitted_by_threads(caller, threads=8, each=1) == [1] * 8  # each admitted
    assert len(reads) == 1


@pytest.mark.parametrize("backend_path", ["django.core.cache.backends.db.DatabaseCache"])
def test_the_rate_holds_on_the_database_cache_under_concurrency(settings, backend_path):
    from django_segment_seq.service.throttle import retry_after
    from django_segment_seq.service.tokens import Rate

    settings.CACHES = {"default": {"BACKEND": backend_path, "LOCATION": "segment_seq_rate_cache"}}
    call_command("createcachetable", stdout=StringIO())
    admitted = admitted_by_threads(lambda: retry_after("db-cache-client", Rate(20, 3600)), threads=8, each=8)
    assert len(admitted) == 8 and sum(admitted) == 20, admitted  # 64 requests, 20 in the window's limit


def admitted_by_threads(count: Callable[[], int | None], threads: int, each: int) -> list[int]:
    """`threads` threads at once, each counting `each` requests with `count` (None: admitted): what each admitted."""
    from django.db import connections

    admitted: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def requests() -> None:
        try:
            start.wait(10)
            mine = sum(count() is None for _ in range(each))
            with lock:
                admitted.append(mine)
        finally:
            connections.close_all()

    started = [threading.Thread(target=requests) for _ in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join(60)
    return admitted


CULLING_CACHES = ["django.core.cache.backends.db.DatabaseCache", "django.core.cache.backends.filebased.FileBasedCache"]


@pytest.mark.parametrize("prefix", PATHS)
@pytest.mark.parametrize("backend_path", CULLING_CACHES)
def test_a_rate_holds_on_a_cache_that_culls_its_keys(prefix, backend_path, settings, tmp_path):
    """Django's database and file caches cull a third of their keys past MAX_ENTRIES: a busy neighbour's keys
    culled the count (or the claimed keys) of a rate, which then admitted a client again within its window."""
    on_database = backend_path.endswith("DatabaseCache")
    location = "segment_seq_rate_cache" if on_database else str(tmp_path / "cache")
    options = {"MAX_ENTRIES": 10, "CULL_FREQUENCY": 2}
    settings.CACHES = {"default": {"BACKEND": backend_path, "LOCATION": location, "OPTIONS": options}}
    if on_database:
        call_command("createcachetable", stdout=StringIO())
    token = add_client("steady", "order*", "--rate", "5/d")
    day = room_in_window(86400, 10)  # ten requests and their neighbours' keys, well inside one day's window
    statuses = []
    for round_ in range(10):
        statuses.append(post(prefix, "order/next", token).status_code)
        for index in range(30):  # the busy neighbour: three times MAX_ENTRIES of keys that sort after the rate's
            cache.set(f"zz-neighbour-{round_}-{index}", index)  # (the database cache culls the lowest keys)
    assert window_of(86400) == day
    assert statuses == [200] * 5 + [429] * 5


# 5. Bad input is a 400 naming the field, never "try again later"


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("count", ["²", "¹⁰", "٣", "1e3", "0x10", "\uff11"])  # the last: a full-width 1
def test_a_count_of_other_digits_is_a_400(prefix, count):
    token = add_client()
    query = HttpClient().post(f"{prefix}order/next?count={count}", HTTP_AUTHORIZATION=f"Bearer {token}")
    form = HttpClient().post(f"{prefix}order/next", {"count": count}, HTTP_AUTHORIZATION=f"Bearer {token}")
    as_json = post(prefix, "order/next", token, {"count": count})
    for response in (query, form, as_json):
        assert response.status_code == 400 and response.json()["field"] == "count", response.content


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_body_nested_too_deep_and_a_nul_in_the_name_are_400s(prefix):
    token = add_client()
    deep = HttpClient().post(
        prefix + "order/next", "[" * 100_000, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert deep.status_code == 400 and deep.json()["field"] == "body"
    nul = post(prefix, "order%00x/next", token)
    assert nul.status_code == 400 and nul.json()["field"] == "name"


# 7. The OpenAPI document as generators read it


def test_the_document_gives_generators_what_they_need():
    from django_segment_seq.snowflake.layouts import LAYOUTS

    document = HttpClient().get("/ids/openapi.json").json()
    assert document["servers"][0]["url"] == "http://testserver/ids"
    count = document["components"]["schemas"]["Count"]["properties"]["count"]
    assert count["maximum"] == 10_000 and count["format"] == "int64"
    block = document["components"]["schemas"]["Block"]["properties"]
    assert {block[key]["format"] for key in ("first", "last", "count")} == {"int64"}
    assert document["components"]["schemas"]["Snowflakes"]["properties"]["ids"]["items"]["format"] == "int64"
    layout = document["paths"]["/snowflake/{layout}/next"]["post"]["parameters"][0]["schema"]
    assert layout["enum"] == sorted(LAYOUTS)
    label = document["paths"]["/fields/{label}/next"]["post"]["parameters"][0]["schema"]
    assert re.fullmatch(label["pattern"].strip("^$"), label["example"])


def test_a_client_count_above_the_documented_maximum_is_refused():
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="max_count"):
        add_client("greedy", "order*", "--max-count", "10001")
