"""The Sequence admin: list, search, validation errors that change nothing, no deletion."""

import pytest
from django.contrib.auth.models import User

from django_segment_seq import next_value
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)


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
