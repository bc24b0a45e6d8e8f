"""The Sequence admin in a real browser: an operator logs in, reads the list, is refused a bad step, saves a good one,
and the next process to fetch a range takes the new step.

Runs headless Debian Chromium through Playwright (`./dev test` installs both). Elsewhere a missing browser skips
these tests; under CI=true it fails them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from tests.conftest import ROOT, worker_env

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
CHANGELIST = "/admin/django_segment_seq/sequence/"
DASH = "\N{EN DASH}"  # between a row's limits
CRUMB = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"  # between the admin's breadcrumbs


def unavailable(reason: str) -> None:
    """Skip on a developer's machine; fail under CI, where the browser is part of the set-up."""
    if IN_CI:
        pytest.fail(f"{reason}; CI must run the browser tests", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def browser_page(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A page of a fresh headless Chromium, closed after the test."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (it is in the test extra)")
    if not os.access(CHROMIUM, os.X_OK):
        unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are still plain sync code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_default_timeout(20_000)
            yield page
        finally:
            browser.close()
            # Connections the test opened while Playwright ran belong to this context: close them here, or the
            # test database cannot be dropped at the end of the run.
            connections.close_all()


def fetch_in_new_process(name: str, tmp_path: Any) -> int:
    """One number from a process that starts with an empty cache, so it takes a range with the row's current step."""
    out = tmp_path / "fetched.txt"
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.workers", "value", name, "1", str(out)],
        cwd=ROOT,
        # Without the give-back at its exit, the row keeps the end of the range it took: the step it used.
        env=worker_env(SEGMENT_SEQ_TEST_SETTINGS='{"GIVE_BACK_UNUSED": false}'),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"worker failed:\n{done.stderr}"
    return int(out.read_text())


def test_operator_edits_a_step_and_the_next_process_uses_it(live_server, browser_page, tmp_path):
    from playwright.sync_api import expect

    page = browser_page
    User.objects.create_superuser("operator", "operator@example.com", "a-long-password")
    Sequence.objects.create(name="invoice", step=10, max_value=100_000)
    Sequence.objects.create(name="order", step=1000)
    assert next_value("invoice") == 1  # this process now holds 1-10; the row says 10 are handed out

    page.goto(f"{live_server.url}/admin/login/?next={CHANGELIST}")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "a-long-password")
    page.click("input[type=submit]")

    # The list: each row's use, and "no limit" where the maximum is the default.
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)
    invoice = rows.filter(has_text="invoice")
    expect(invoice.locator(".field-value_shown")).to_contain_text("10")
    expect(invoice.locator(".field-value_shown meter")).to_have_count(1)
    expect(invoice.locator(".field-limits")).to_contain_text("99,990 left")
    order = rows.filter(has_text="order")
    expect(order.locator(".field-limits")).to_have_text(f"1 {DASH} no limit")
    expect(order.locator(".field-runs_out")).to_have_text("no limit")
    assert "9223372036854775807" not in page.content()

    invoice.get_by_role("link", name="invoice").click()
    expect(page.locator("#id_step")).to_have_value("10")
    expect(page.locator(".field-base_sequence")).to_have_count(0)  # not a per-period row

    # A step of 0 is refused, on the step field alone, and nothing is written.
    page.fill("#id_step", "0")
    page.click("input[name=_save]")
    expect(page.locator(".errornote")).to_be_visible()
    expect(page.locator(".field-step .errorlist")).to_contain_text("at least 1")
    expect(page.locator(".errorlist")).to_have_count(1)
    assert Sequence.objects.get(name="invoice").step == 10

    # A maximum below the handed-out numbers: the error is on the maximum, not on the untouched value or step.
    page.fill("#id_step", "10")
    page.fill("#id_max_value", "5")
    page.click("input[name=_save]")
    expect(page.locator(".field-max_value .errorlist")).to_contain_text("must not be below the value")
    expect(page.locator(".errorlist")).to_have_count(1)

    page.fill("#id_step", "25")
    page.fill("#id_max_value", "100000")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist .success")).to_contain_text("invoice")
    assert page.url.endswith(CHANGELIST)
    row = Sequence.objects.get(name="invoice")
    assert (row.step, row.value, row.max_value) == (25, 10, 100_000)

    # A process started now takes its first range with the new step.
    assert fetch_in_new_process("invoice", tmp_path) == 11
    assert Sequence.objects.get(name="invoice").value == 10 + 25


# The lists fit the window: every column in view at 1280 pixels and wider, no sideways scroll ---------------------

WIDTHS = [1280, 1920]
CLIENTS = "/admin/segment_seq_service/client/"


def keep(path: Any) -> None:
    """A copy of a screenshot in SEGMENT_SEQ_SCREENSHOTS=DIR, when set (they are made in the test's tmp_path)."""
    wanted = os.environ.get("SEGMENT_SEQ_SCREENSHOTS")
    if wanted:
        import shutil
        from pathlib import Path

        Path(wanted).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(wanted) / path.name)


def overflow(page: Any) -> list[str]:
    """The list's columns that end outside the window or its scrolling box; empty when all of them are in view."""
    return page.evaluate(
        """() => {
            const box = document.querySelector('#changelist .results') || document.documentElement;
            const right = Math.min(window.innerWidth, box.getBoundingClientRect().right);
            const cut = [...document.querySelectorAll('#result_list thead th')]
                .filter(th => th.getBoundingClientRect().right > right + 0.5)
                .map(th => th.innerText.trim() || th.className);
            if (document.documentElement.scrollWidth > window.innerWidth) cut.push('(the page scrolls)');
            if (box.scrollWidth > box.clientWidth) cut.push('(the list scrolls)');
            return cut;
        }"""
    )


def widths(page: Any) -> dict[str, int]:
    """Each column's width in pixels, for the message of a failed check."""
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#result_list thead th')]
            .map(th => [th.innerText.trim() || th.className, Math.round(th.getBoundingClientRect().width)]))"""
    )


def log_in(page: Any, url: str, next_url: str) -> None:
    User.objects.create_superuser("operator", "operator@example.com", "a-long-password")
    page.goto(f"{url}/admin/login/?next={next_url}")
    page.fill("#id_username", "operator")
    page.fill("#id_password", "a-long-password")
    page.click("input[type=submit]")


def busy_rows() -> None:
    """Rows of every kind the list shows: plain, with a maximum, cycling, per period and per scope, with use figures."""
    import datetime

    from django.utils import timezone

    from tests.testapp.models import Company, CompanyInvoice, CompanyOrder, DailyOrder

    acme, globex = Company.objects.create(code="ACME"), Company.objects.create(code="GLOBEX")
    for company in (acme, globex):
        CompanyOrder.objects.create(company=company)
        CompanyInvoice.objects.create(company=company)
    DailyOrder.objects.create()
    Sequence.objects.create(name="ticket", step=10, max_value=100_000, value=41_230)
    Sequence.objects.create(name="customer-account-number", step=1000, value=9_876_543_210)
    Sequence.objects.create(name="coupon", step=10, min_value=1, max_value=9_999, cycle=True, value=5_000)
    earlier = timezone.now() - datetime.timedelta(days=3)
    Sequence.objects.filter(name__in=["ticket", "coupon"]).update(created=earlier)


@pytest.mark.parametrize("width, redis", [(1280, False), (1280, True), (1920, False)], ids=["1280", "redis", "1920"])
def test_the_sequence_list_fits_the_window(live_server, browser_page, tmp_path, settings, width, redis):
    """With the Redis tier configured the list has its action, and so a column of checkboxes more."""
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    if redis:  # the list asks nothing of Redis: a tier that covers none of these rows and no server will do
        settings.SEGMENT_SEQ = {
            **settings.SEGMENT_SEQ,
            "REDIS": {"SEQUENCES": ["redis-*"], "LOCATION": "redis://127.0.0.1:9"},
        }
    busy_rows()
    log_in(page, live_server.url, CHANGELIST)
    expect(page.locator("#result_list tbody tr").first).to_be_visible()
    for column in ["scope", "period", "value", "step", "limits", "runs out", "cycle", "modified"]:
        expect(page.locator("#result_list thead")).to_contain_text(column, ignore_case=True)
    ticket = page.locator("#result_list tbody tr").filter(has_text="ticket")
    expect(ticket.locator(".field-limits")).to_have_text(re.compile(rf"1 {DASH} 100,000\s*58,770 left"))
    expect(page.locator("#result_list .action-checkbox-column")).to_have_count(1 if redis else 0)
    shot = tmp_path / f"sequence-list-{width}{'-redis' if redis else ''}.png"
    page.screenshot(path=str(shot), full_page=True)
    keep(shot)
    assert overflow(page) == [], f"columns out of view at {width} pixels: {widths(page)}"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_client_list_fits_the_window(live_server, browser_page, tmp_path, width):
    from django.utils import timezone
    from playwright.sync_api import expect

    from django_segment_seq.service.models import Client
    from django_segment_seq.service.tokens import digest, new_token, shown_part

    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    now = timezone.now()
    for name, patterns, rate, revoked in [
        ("orders-api", "order*,shop.Order.number", "50/s", None),
        ("billing-service-eu-west", "invoice*,snowflake:classic", "1000/m", None),
        ("reporting", "report-*", "", now),
    ]:
        token = new_token()
        Client.objects.create(
            name=name,
            token_start=shown_part(token),
            token_digest=digest(token),
            sequences=patterns,
            rate=rate,
            requests=1_234_567,
            numbers=98_765_432_100,
            last_used_at=now,
            revoked_at=revoked,
        )
    log_in(page, live_server.url, CLIENTS)
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    shot = tmp_path / f"client-list-{width}.png"
    page.screenshot(path=str(shot), full_page=True)
    keep(shot)
    assert overflow(page) == [], f"columns out of view at {width} pixels: {widths(page)}"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_client_add_form_and_the_breadcrumbs(live_server, browser_page, tmp_path, width):
    """The add form asks only what a new client needs; the Sequence pages' breadcrumb names the app apart."""
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server.url, f"{CLIENTS}add/")
    form = page.locator("#content-main form")
    expect(form.locator("#id_name")).to_be_visible()
    expect(form).not_to_contain_text("Revoked")
    expect(form).not_to_contain_text("Requests served")
    expect(form.locator("input[type=date], input[name^=revoked_at]")).to_have_count(0)
    shot = tmp_path / f"client-add-{width}.png"
    page.screenshot(path=str(shot), full_page=True)
    keep(shot)

    Sequence.objects.create(name="invoice", step=10)
    page.goto(f"{live_server.url}{CHANGELIST}")
    # Django 6.1 draws the separators with CSS (not in the text); 5.2 and 6.0 write them.
    crumbs = re.compile(rf"Home\s*{CRUMB}?\s*Sequence numbers\s*{CRUMB}?\s*Sequences")
    expect(page.locator(".breadcrumbs")).to_have_text(crumbs)
    page.get_by_role("link", name="invoice").click()
    expect(page.locator(".breadcrumbs")).to_contain_text("Sequence numbers")
    shot = tmp_path / f"sequence-change-{width}.png"
    page.screenshot(path=str(shot), full_page=True)
    keep(shot)
