"""The register's admin: the list with a link to each series' Sequence row, no edits or deletions, voiding through
void() with the signed-in user."""

import pytest
from django.contrib.auth.models import User

from django_segment_seq import next_values, void
from django_segment_seq.models import Sequence, VoidedNumber

pytestmark = pytest.mark.django_db(transaction=True)

LIST_URL = "/admin/django_segment_seq/voidednumber/"
ADD_URL = LIST_URL + "add/"


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("auditor", "auditor@example.com", "pw"))
    return client


@pytest.fixture
def voided():
    next_values("order", 10)
    return void("testapp.Order.order_no", 7, "cancelled draft", user="alice")


def test_list_shows_the_record_and_links_its_sequence_row(admin_client, voided):
    page = admin_client.get(LIST_URL).content.decode()
    row = Sequence.objects.get(name="order")
    for shown in ("testapp.Order.order_no", "cancelled draft", "alice", ">7<"):
        assert shown in page
    assert f'href="/admin/django_segment_seq/sequence/{row.pk}/change/"' in page


def test_records_cannot_be_changed_or_deleted(admin_client, voided):
    change = f"{LIST_URL}{voided.pk}/change/"
    page = admin_client.get(change)
    assert page.status_code == 200 and "cancelled draft" in page.content.decode()
    assert 'name="reason"' not in page.content.decode()  # shown, not editable
    admin_client.post(change, {"reason": "rewritten"})
    assert VoidedNumber.objects.get().reason == "cancelled draft"
    assert admin_client.post(f"{LIST_URL}{voided.pk}/delete/", {"post": "yes"}).status_code == 403
    assert VoidedNumber.objects.count() == 1


def test_the_add_form_voids_as_the_signed_in_user(admin_client):
    next_values("order", 10)
    response = admin_client.post(
        ADD_URL, {"label": "testapp.Order.order_no", "number_or_text": "4", "reason": "spoiled form"}
    )
    assert response.status_code == 302
    record = VoidedNumber.objects.get()
    assert (record.number, record.reason, record.voided_by, record.sequence) == (4, "spoiled form", "auditor", "order")


def test_the_add_form_shows_what_void_refuses(admin_client, voided):
    response = admin_client.post(ADD_URL, {"label": "testapp.Order.order_no", "number_or_text": "7", "reason": "again"})
    assert response.status_code == 200 and "voided already" in response.content.decode()
    response = admin_client.post(
        ADD_URL, {"label": "testapp.Order.order_no", "number_or_text": "5000", "reason": "typo"}
    )
    assert "never handed out" in response.content.decode()
    assert VoidedNumber.objects.count() == 1


def test_a_user_without_the_add_permission_cannot_void(client, voided):
    staff = User.objects.create_user("clerk", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get(ADD_URL).status_code == 403
