"""The register of voided numbers in a real browser at 1400 pixels: the list newest first fits the window without
sideways scrolling, and the add form offers the fields in a dropdown. Screenshots go to the test's tmp_path
(SEGMENT_SEQ_SCREENSHOTS=DIR keeps a copy there)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from django_segment_seq import next_values, void
from tests.processes.test_admin_browser import browser_page  # noqa: F401 - the fixture
from tests.testapp.models import Company, CompanyOrder, DailyOrder

pytestmark = pytest.mark.django_db(transaction=True)

WIDTH = 1400
LIST_URL = "/admin/django_segment_seq/voidednumber/"


def keep(path: Path) -> None:
    wanted = os.environ.get("SEGMENT_SEQ_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(wanted) / path.name)


def fits(page: Any) -> bool:
    """Neither the page nor the list's own box scrolls sideways (the admin lets a wide table scroll in its box)."""
    return page.evaluate(
        """() => {
            const page = document.documentElement.scrollWidth <= window.innerWidth;
            const box = document.querySelector('#changelist .results');
            return page && (!box || box.scrollWidth <= box.clientWidth);
        }"""
    )


def test_the_register_is_readable_at_1400_pixels(live_server, browser_page, tmp_path, clock):  # noqa: F811
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size({"width": WIDTH, "height": 900})
    User.objects.create_superuser("auditor", "auditor@example.com", "a-long-password")
    company = Company.objects.create(code="ACME")
    for _ in range(3):
        CompanyOrder.objects.create(company=company)
        DailyOrder.objects.create()
    next_values("order", 20)
    long_reason = "customer cancelled before the invoice was sent, confirmed by phone and by a letter of 3 November"
    void("testapp.DailyOrder.order_no", "OD20261122000002", long_reason, user="alice")
    void("testapp.CompanyOrder.number", 2, "printed on a spoiled form", scope={"company": company}, user="bob")
    void("testapp.Order.order_no", 17, "cancelled draft", user="a-rather-long-user-name@example.com")

    page.goto(f"{live_server.url}/admin/login/?next={LIST_URL}")
    page.fill("#id_username", "auditor")
    page.fill("#id_password", "a-long-password")
    page.click("input[type=submit]")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("cancelled draft")  # newest first
    expect(page.locator("#changelist-filter")).to_contain_text("voided at")
    shot = tmp_path / "register-list-1400.png"
    page.screenshot(path=str(shot), full_page=True)
    keep(shot)
    assert fits(page), "the register's list scrolls sideways at 1400 pixels"

    page.goto(f"{live_server.url}{LIST_URL}add/")
    expect(page.locator("select#id_label option")).not_to_have_count(0)
    page.select_option("select#id_label", "testapp.DailyOrder.order_no")
    page.fill("#id_number_or_text", "3")
    page.fill("#id_period", "2026-11-22")
    page.fill("#id_reason", "torn")
    shot = tmp_path / "register-add-1400.png"
    page.screenshot(path=str(shot), full_page=True)
    keep(shot)
    assert fits(page)
    page.click("input[name=_save]")
    expect(page.locator(".messagelist .success")).to_be_visible()
    expect(rows.first).to_contain_text("torn")

    # "Void selected" from the project's own admin: the reason asked on a page of its own.
    page.goto(f"{live_server.url}/admin/testapp/dailyorder/")
    page.check("#action-toggle")
    page.select_option("select[name=action]", "void_selected")
    page.click("button[name=index]")
    expect(page.locator("textarea[name=reason]")).to_be_visible()
    shot = tmp_path / "void-selected-1400.png"
    page.screenshot(path=str(shot), full_page=True)
    keep(shot)
    assert fits(page)
    page.fill("textarea[name=reason]", "batch printed on the wrong paper")
    page.click("input[type=submit]")
    expect(page.locator(".messagelist")).to_contain_text("1 number voided.")  # 2 and 3 were voided above
    expect(page.locator(".messagelist .error")).to_have_count(2)
    expect(page.locator(".messagelist .error").first).to_contain_text("voided already")
