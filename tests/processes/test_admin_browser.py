"""The Sequence admin in a real browser: an operator logs in, reads the list, is refused a bad step, saves a good one,
and the next process to fetch a range takes the new step.

Runs headless Debian Chromium through Playwright (`./dev test` installs both). Elsewhere a missing browser skips
these tests; under CI=true it fails them.
"""

from __future__ import annotations

import os
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
    expect(invoice.locator(".field-used")).to_contain_text("10")
    expect(invoice.locator(".field-used meter")).to_have_count(1)
    expect(invoice.locator(".field-left")).to_have_text("99,990")
    order = rows.filter(has_text="order")
    expect(order.locator(".field-max_value_shown")).to_have_text("no limit")
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
