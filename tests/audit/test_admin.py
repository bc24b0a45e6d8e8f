"""The register's admin: the list with a link to each series' Sequence row, no edits or deletions, voiding through
void() with the signed-in user."""

import html
import re

import pytest
from django.contrib.auth.models import Permission, User

from django_segment_seq import next_values, void
from django_segment_seq.models import Sequence, VoidedNumber
from tests.testapp.models import CheckedInvoice, Company, CompanyOrder, DailyOrder

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


def test_the_list_is_newest_first_with_a_date_filter(admin_client):
    next_values("order", 10)
    for number in (3, 9, 5):
        void("testapp.Order.order_no", number, f"reason {number}")
    page = admin_client.get(LIST_URL).content.decode()
    assert page.index("reason 5") < page.index("reason 9") < page.index("reason 3")
    today = re.search(r'href="(\?voided_at__gte=[^"]+)"', page)  # the date filter's "Today"
    assert today is not None
    filtered = admin_client.get(LIST_URL + html.unescape(today[1])).content.decode()
    assert all(f"reason {number}" in filtered for number in (3, 5, 9))


def test_the_add_form_offers_the_fields_in_a_dropdown(admin_client):
    page = admin_client.get(ADD_URL).content.decode()
    assert '<select name="label"' in page
    assert '<option value="testapp.DailyOrder.order_no">' in page and "testapp.Company.code" not in page


# Issue 29, item 5. Before: "12" with period 2026-11-22 was refused as "not a text its format makes".
def test_the_add_form_voids_a_bare_number_of_a_formatted_field(admin_client, clock):
    for _ in range(12):
        DailyOrder.objects.create()
    response = admin_client.post(
        ADD_URL,
        {"label": "testapp.DailyOrder.order_no", "number_or_text": "12", "period": "2026-11-22", "reason": "torn"},
    )
    assert response.status_code == 302, response.content.decode()
    record = VoidedNumber.objects.get()
    assert (record.number, record.period, record.text) == (12, "2026-11-22", "")


# Issue 29, item 3, through the admin. Before: the wrong check digit was recorded as typed.
def test_the_add_form_refuses_a_wrong_check_digit(admin_client, clock):
    CheckedInvoice.objects.create()
    response = admin_client.post(
        ADD_URL, {"label": "testapp.CheckedInvoice.number", "number_or_text": "INV-2026-0000012", "reason": "x"}
    )
    assert response.status_code == 200 and "check digits right" in response.content.decode()
    assert not VoidedNumber.objects.exists()


ORDERS_URL = "/admin/testapp/dailyorder/"


def test_void_selected_asks_for_the_reason_then_voids_each(admin_client, clock):
    orders = [DailyOrder.objects.create() for _ in range(3)]
    picked = {"action": "void_selected", "_selected_action": [orders[0].pk, orders[2].pk]}
    asked = admin_client.post(ORDERS_URL, picked)
    page = asked.content.decode()
    assert asked.status_code == 200 and 'name="reason"' in page and orders[2].order_no in page
    assert not VoidedNumber.objects.exists()
    done = admin_client.post(ORDERS_URL, {**picked, "post": "yes", "reason": "customer cancelled"}, follow=True)
    assert "2 numbers voided." in done.content.decode()
    records = VoidedNumber.objects.order_by("number")
    assert [(r.text, r.reason, r.voided_by) for r in records] == [
        (orders[0].order_no, "customer cancelled", "auditor"),
        (orders[2].order_no, "customer cancelled", "auditor"),
    ]
    again = admin_client.post(ORDERS_URL, {**picked, "post": "yes", "reason": "again"}, follow=True)
    assert "voided already" in again.content.decode() and VoidedNumber.objects.count() == 2


def test_void_selected_without_a_reason_asks_again(admin_client, clock):
    order = DailyOrder.objects.create()
    response = admin_client.post(
        ORDERS_URL, {"action": "void_selected", "_selected_action": [order.pk], "post": "yes", "reason": ""}
    )
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    assert not VoidedNumber.objects.exists()


def test_void_selected_passes_each_rows_scope(admin_client):
    acme, globex = Company.objects.create(code="acme"), Company.objects.create(code="globex")
    first, second = CompanyOrder.objects.create(company=acme), CompanyOrder.objects.create(company=globex)
    admin_client.post(
        "/admin/testapp/companyorder/",
        {"action": "void_selected", "_selected_action": [first.pk, second.pk], "post": "yes", "reason": "x"},
    )
    assert set(VoidedNumber.objects.values_list("scope", "number")) == {
        (f"company={acme.pk}", 1),
        (f"company={globex.pk}", 1),
    }


def test_void_selected_is_offered_only_to_who_may_void(client, clock):
    DailyOrder.objects.create()
    clerk = User.objects.create_user("clerk", password="pw", is_staff=True)
    clerk.user_permissions.add(Permission.objects.get(codename="view_dailyorder"))
    client.force_login(clerk)
    assert "void_selected" not in client.get(ORDERS_URL).content.decode()
    clerk.user_permissions.add(Permission.objects.get(codename="add_voidednumber"))
    client.force_login(User.objects.get(pk=clerk.pk))
    assert "void_selected" in client.get(ORDERS_URL).content.decode()
