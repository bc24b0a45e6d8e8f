"""The admin with per-period rows: grouped with their sequence, newest period first, same validation as any row."""

import re

import pytest
from django.contrib.auth.models import User

from django_segment_seq.models import Sequence
from tests.testapp.models import DailyOrder

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = "/admin/django_segment_seq/sequence/"


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("admin", "admin@example.com", "pw"))
    return client


@pytest.fixture
def three_days(clock):
    Sequence.objects.create(name="daily-order", step=10)
    Sequence.objects.create(name="zzz-other")
    for day in ("2026-11-21", "2026-11-22", "2026-11-23"):
        clock.set(f"{day} 12:00")
        DailyOrder.objects.create()


def listed_names(page: str) -> list[str]:
    return re.findall(r'<th class="field-name"><a href="[^"]*">([^<]+)</a>', page)


def test_periods_follow_their_sequence_newest_first(admin_client, three_days):
    page = admin_client.get(CHANGELIST).content.decode()
    assert listed_names(page) == [
        "daily-order",
        "daily-order@2026-11-23",
        "daily-order@2026-11-22",
        "daily-order@2026-11-21",
        "zzz-other",
    ]


def test_filter_by_sequence_shows_it_with_its_periods(admin_client, three_days):
    page = admin_client.get(CHANGELIST, {"sequence": "daily-order"}).content.decode()
    assert listed_names(page)[0] == "daily-order" and len(listed_names(page)) == 4
    assert "zzz-other" not in listed_names(page)


def test_period_row_has_the_same_validation(admin_client, three_days):
    row = Sequence.objects.get(name="daily-order@2026-11-22")
    before = Sequence.objects.filter(pk=row.pk).values().get()
    data = {"value": row.value, "step": 0, "min_value": row.min_value, "max_value": row.max_value}
    response = admin_client.post(f"{CHANGELIST}{row.pk}/change/", data)
    assert response.status_code == 200 and "at least 1" in response.content.decode()
    assert Sequence.objects.filter(pk=row.pk).values().get() == before


def test_base_step_edit_is_saved_and_explained(admin_client, three_days):
    base = Sequence.objects.get(name="daily-order")
    data = {"value": base.value, "step": 5, "min_value": base.min_value, "max_value": base.max_value}
    response = admin_client.post(f"{CHANGELIST}{base.pk}/change/", data, follow=True)
    assert "created from now on" in response.content.decode()
    assert Sequence.objects.get(name="daily-order").step == 5
    assert Sequence.objects.get(name="daily-order@2026-11-23").step == 10
