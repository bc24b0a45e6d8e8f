"""The Sequence admin: list, search, use figures, errors on the edited field that change nothing, no deletion."""

import datetime
import html
import re

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from django_segment_seq import next_value
from django_segment_seq.db.columns import BIGINT_MAX
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)

DASH = "\N{EN DASH}"  # between a row's limits
CRUMB = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"  # between the admin's breadcrumbs


@pytest.fixture
def admin_client(client):
    user = User.objects.create_superuser("admin", "admin@example.com", "pw")
    client.force_login(user)
    return client


def change_url(row):
    return f"/admin/django_segment_seq/sequence/{row.pk}/change/"


def form_data(row, **changes):
    data = {
        "value": row.value,
        "step": row.step,
        "min_value": row.min_value,
        "max_value": row.max_value,
        "cycle": "on" if row.cycle else "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v != ""}


def test_changelist_shows_and_searches(admin_client):
    next_value("orders")
    next_value("tickets")
    page = admin_client.get("/admin/django_segment_seq/sequence/", {"q": "order"}).content.decode()
    assert "orders" in page and "tickets" not in page


def test_step_edit_is_saved(admin_client):
    next_value("s")
    row = Sequence.objects.get(name="s")
    response = admin_client.post(change_url(row), form_data(row, step=50))
    assert response.status_code == 302
    assert Sequence.objects.get(name="s").step == 50


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"step": 0}, "at least 1"),
        ({"min_value": 10, "max_value": 5}, "greater than the minimum"),
        ({"value": 3}, "only move forward"),
        ({"max_value": 999}, "must not be below the value"),
        ({"step": 2000, "min_value": 1000, "max_value": 2500}, "must not exceed"),
    ],
)
def test_invalid_input_shows_an_error_and_changes_nothing(admin_client, changes, message):
    next_value("s")
    row = Sequence.objects.get(name="s")
    before = Sequence.objects.filter(pk=row.pk).values().get()
    response = admin_client.post(change_url(row), form_data(row, **changes))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert Sequence.objects.filter(pk=row.pk).values().get() == before


def test_name_is_read_only_once_created(admin_client):
    next_value("s")
    row = Sequence.objects.get(name="s")
    admin_client.post(change_url(row), {**form_data(row), "name": "renamed"})
    assert Sequence.objects.filter(name="s").exists() and not Sequence.objects.filter(name="renamed").exists()


def test_add_form_starts_at_minimum(admin_client):
    response = admin_client.post(
        "/admin/django_segment_seq/sequence/add/", {"name": "new", "step": 10, "min_value": 100, "max_value": 10**6}
    )
    assert response.status_code == 302
    assert Sequence.objects.get(name="new").value == 99
    assert next_value("new") == 100


def test_rows_cannot_be_deleted(admin_client):
    next_value("s")
    row = Sequence.objects.get(name="s")
    response = admin_client.post(f"/admin/django_segment_seq/sequence/{row.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert Sequence.objects.filter(pk=row.pk).exists()


def test_edit_from_a_page_loaded_before_other_processes_took_ranges(admin_client):
    """The page still shows an old value; the edit saves and the value is not rewound."""
    Sequence.objects.create(name="s", step=10)
    shown = Sequence.objects.get(name="s")
    Sequence.objects.filter(name="s").update(value=500)  # other processes took ranges meanwhile
    response = admin_client.post(change_url(shown), {**form_data(shown, step=20), "initial-value": shown.value})
    assert response.status_code == 302
    row = Sequence.objects.get(name="s")
    assert (row.value, row.step) == (500, 20)


def test_stale_page_cannot_lower_the_maximum_below_the_stored_value(admin_client):
    Sequence.objects.create(name="s", step=10)
    shown = Sequence.objects.get(name="s")
    Sequence.objects.filter(name="s").update(value=500)
    data = {**form_data(shown, max_value=400), "initial-value": shown.value}
    response = admin_client.post(change_url(shown), data)
    assert response.status_code == 200
    assert "must not be below the value" in response.content.decode()
    assert Sequence.objects.get(name="s").max_value != 400


# What an operator reads: use, "no limit", period fields, and each error on the field that was edited ---------------


def aged(name, days, **fields):
    """A row created `days` ago whose value last moved now."""
    row = Sequence.objects.create(name=name, **fields)
    now = timezone.now()
    Sequence.objects.filter(pk=row.pk).update(created=now - datetime.timedelta(days=days), modified=now)
    return Sequence.objects.get(pk=row.pk)


def cell(page, row_name, column):
    """The text of one changelist cell, tags stripped."""
    row = re.search(rf"<tr>(?:(?!</tr>).)*>{re.escape(row_name)}</a>(?:(?!</tr>).)*</tr>", page, re.S).group(0)
    found = re.search(rf'<td class="field-{column}[^"]*">(.*?)</td>', row, re.S).group(1)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found)).split())


def test_changelist_shows_use_and_when_it_runs_out(admin_client):
    aged("ticket", 3, step=10, max_value=100_000, value=41_230)
    aged("order", 3, step=1000, value=5000)
    aged("coupon", 3, step=10, max_value=1000)
    page = admin_client.get("/admin/django_segment_seq/sequence/").content.decode()
    assert cell(page, "ticket", "value_shown") == "41,230 41%"
    assert cell(page, "ticket", "limits") == f"1 {DASH} 100,000 58,770 left"
    # 41,230 numbers in 3 days is 9.5 a minute; 58,770 more take another 4.28 days.
    assert cell(page, "ticket", "runs_out") == "in 4 days, 6 hours at its average of 9.5 a minute"
    assert [cell(page, "order", c) for c in ("value_shown", "limits", "runs_out")] == [
        "5,000",
        f"1 {DASH} no limit",
        "no limit",
    ]
    assert cell(page, "coupon", "runs_out") == "never nothing handed out yet"
    assert "9223372036854775807" not in page


def test_period_column_is_there_only_for_period_rows(admin_client):
    Sequence.objects.create(name="plain")
    assert "column-period_shown" not in admin_client.get("/admin/django_segment_seq/sequence/").content.decode()
    Sequence.objects.create(name="daily@2026-11-22", base_name="daily", period="2026-11-22")
    page = admin_client.get("/admin/django_segment_seq/sequence/").content.decode()
    assert cell(page, "daily@2026-11-22", "period_shown") == "2026-11-22"
    assert cell(page, "plain", "period_shown") == ""


def test_change_form_shows_no_limit_for_the_default_maximum(admin_client):
    row = Sequence.objects.create(name="s", step=10)
    page = admin_client.get(change_url(row)).content.decode()
    field = re.search(r'<input type="number" name="max_value"[^>]*>', page).group(0)
    assert 'placeholder="no limit"' in field and " value=" not in field  # shown empty, not as 9223372036854775807
    response = admin_client.post(change_url(row), {**form_data(row, step=20), "max_value": ""})
    assert response.status_code == 302
    assert Sequence.objects.get(pk=row.pk).max_value == BIGINT_MAX


def test_period_fields_show_on_period_rows_only(admin_client):
    base = Sequence.objects.create(name="daily")
    period = Sequence.objects.create(name="daily@2026-11-22", base_name="daily", period="2026-11-22")
    page = admin_client.get(change_url(base)).content.decode()
    assert "field-base_sequence" not in page and "field-period" not in page
    page = admin_client.get(change_url(period)).content.decode()
    assert f'<a href="{change_url(base)}">daily</a>' in page and "2026-11-22" in page


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"max_value": 50}, "max_value", "must not be below the value: numbers up to 100"),
        ({"min_value": 2000}, "min_value", "less than the maximum"),
        ({"min_value": 995}, "min_value", "at least as many numbers as the step (10), not 6"),
        ({"value": 5000}, "value", "must not exceed the maximum (1000)"),
        ({"value": 50}, "value", "only move forward"),
        ({"step": 2000}, "step", "must not exceed the numbers between minimum and maximum (1000)"),
    ],
)
def test_each_error_is_on_the_field_that_was_edited(admin_client, changes, field, message):
    row = Sequence.objects.create(name="s", step=10, max_value=1000, value=100)
    response = admin_client.post(change_url(row), form_data(row, **changes))
    errors = response.context["adminform"].form.errors
    assert list(errors) == [field]
    assert message in errors[field][0]


def test_use_on_a_refused_form_is_the_stored_row(admin_client):
    row = Sequence.objects.create(name="s", step=10, max_value=1000, value=100)
    page = admin_client.post(change_url(row), form_data(row, max_value=50)).content.decode()
    assert "must not be below the value" in page
    assert re.search(r"<meter [^>]*value=\"0\.100000\"", page) and "900" in page


def test_change_form_shows_the_server_history_read_only(admin_client):
    row = Sequence.objects.create(name="fenced", history="pg:7440219912938211391:3")
    page = admin_client.get(change_url(row)).content.decode()
    assert "pg:7440219912938211391:3" in page and 'name="history"' not in page  # shown, never an input
    response = admin_client.post(change_url(row), {**form_data(row, step=20), "history": "forged"})
    assert response.status_code == 302
    assert Sequence.objects.get(pk=row.pk).history == "pg:7440219912938211391:3"


# The page around the list: its actions, its breadcrumb, and the ID service's clients --------------------------------

CHANGELIST = "/admin/django_segment_seq/sequence/"
# A Redis tier the list never asks (it covers none of the rows here and names no running server).
TIER = {"SEQUENCES": ["redis-*"], "LOCATION": "redis://127.0.0.1:9"}


def test_without_the_redis_tier_the_list_offers_no_action(admin_client):
    next_value("s")
    page = admin_client.get(CHANGELIST).content.decode()
    assert "drop_redis_state" not in page and 'name="action"' not in page
    assert "action-checkbox" not in page  # no action: no checkboxes either


def test_the_redis_action_is_offered_once_the_tier_is_configured(admin_client, settings):
    next_value("s")
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": TIER}
    page = admin_client.get(CHANGELIST).content.decode()
    assert '<option value="drop_redis_state">Drop the Redis state' in page


def test_the_action_is_refused_without_the_tier(admin_client):
    next_value("s")
    row = Sequence.objects.get(name="s")
    response = admin_client.post(CHANGELIST, {"action": "drop_redis_state", "_selected_action": [row.pk]}, follow=True)
    assert response.status_code == 200  # the list again, the action not run
    assert "Dropped the Redis state" not in response.content.decode()


def test_the_breadcrumb_names_the_app_apart_from_its_model(admin_client):
    next_value("s")
    row = Sequence.objects.get(name="s")
    for url in (CHANGELIST, change_url(row)):
        # Django 6.1 lists the crumbs in an <ol> and draws the separators with CSS; 5.2 and 6.0 write them in a <div>.
        page = admin_client.get(url).content.decode()
        crumbs = re.search(r'<(div|ol) class="breadcrumbs">(.*?)</\1>', page, re.S)
        assert crumbs is not None, page[:2000]
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", crumbs.group(2))).replace(CRUMB, " ").split())
        assert text.startswith("Home Sequence numbers Sequences"), text
    assert "Sequence numbers" in admin_client.get("/admin/").content.decode()
    from django.apps import apps

    assert apps.get_app_config("django_segment_seq").label == "django_segment_seq"  # the label is unchanged


def test_the_list_leaves_the_navigation_sidebar_out(admin_client):
    next_value("s")
    assert 'id="nav-sidebar"' not in admin_client.get(CHANGELIST).content.decode()
    assert 'id="nav-sidebar"' not in admin_client.get("/admin/segment_seq_service/client/").content.decode()


CLIENT_ADD = "/admin/segment_seq_service/client/add/"
SERVICE_WRITES = ["revoked_at", "previous_valid_until", "created_at", "last_used_at", "requests", "numbers"]


def test_the_client_add_form_asks_only_what_a_new_client_needs(admin_client):
    page = admin_client.get(CLIENT_ADD).content.decode()
    for field in ["name", "sequences", "max_count", "rate", "max_new_rows"]:
        assert f'name="{field}"' in page, field
    for field in [*SERVICE_WRITES, "rows_created", "token_start"]:
        assert f"field-{field}" not in page and f'name="{field}' not in page, field
    assert "Revoked" not in page and "Requests served" not in page


def test_the_client_change_form_shows_the_revocation_and_the_counts(admin_client):
    from django_segment_seq.service.models import Client

    added = admin_client.post(
        CLIENT_ADD, {"name": "orders-api", "sequences": "order*", "max_count": 100, "rate": "", "max_new_rows": 0}
    )
    assert added.status_code == 200 and "shown this once" in added.content.decode()
    client = Client.objects.get(name="orders-api")
    page = admin_client.get(f"/admin/segment_seq_service/client/{client.pk}/change/").content.decode()
    assert 'name="revoked_at_0"' in page  # the date and time inputs of a revocation
    for field in ["token_start", "requests", "numbers", "rows_created", "last_used_at"]:
        assert f"field-{field}" in page, field


def test_the_client_list_has_short_headers_and_grouped_counts(admin_client):
    from django_segment_seq.service.models import Client

    Client.objects.create(
        name="orders-api", token_digest="d" * 64, sequences="order*,shop.Order.number", requests=1_234_567
    )
    page = admin_client.get("/admin/segment_seq_service/client/").content.decode()
    assert cell(page, "orders-api", "requests_shown") == "1,234,567"
    assert cell(page, "orders-api", "patterns") == "order* , shop.Order.number"  # a break may follow the comma
    columns = re.findall(r"<th scope=\"col\".*?</th>", page, re.S)
    headers = [" ".join(re.sub(r"<[^>]+>", " ", th).split()) for th in columns]
    assert [h for h in headers if h] == [
        "Name",
        "Token",
        "Sequences",
        "Max count",
        "Rate",
        "Last use",
        "Requests",
        "Numbers",
        "Revoked",
    ]
