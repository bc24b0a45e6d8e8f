"""A worker process for the concurrency tests: takes numbers one way and writes every one it got to a file.

Run as `python -m tests.support.workers MODE NAME COUNT OUT`, with the environment naming the test database.
"""

import itertools
import os
import sys


def main(mode: str, name: str, count: int, out: str) -> None:
    import django

    django.setup()
    if os.environ.get("SEGMENT_SEQ_TEST_CPU"):
        # A starved CPU: every worker of the test on one core once set up, so fetches run slowly while no row is held.
        os.sched_setaffinity(0, {int(os.environ["SEGMENT_SEQ_TEST_CPU"])})
    from django_segment_seq import next_value, next_values
    from tests.testapp.models import BulkItem, Invoice, Order

    got: list[int] = []
    if mode == "value":
        got = [next_value(name) for _ in range(count)]
    elif mode == "values":
        while len(got) < count:
            got.extend(next_values(name, min(37, count - len(got))))
    elif mode == "save":  # name is ignored: Order.order_no uses the "order" sequence
        got = [Order.objects.create().order_no for _ in range(count)]
    elif mode == "mixed":
        while len(got) < count:
            got.append(next_value(name))
            got.extend(next_values(name, 5))
    elif mode == "bulk":  # name is ignored: BulkItem uses "bulk-id" and "bulk-serial"
        while len(got) < count:
            items = BulkItem.objects.bulk_create([BulkItem() for _ in range(min(250, count - len(got)))])
            got.extend(item.pk for item in items)
    elif mode == "bulk-default":  # name is ignored: Invoice uses "invoice", through Django's default manager
        while len(got) < count:
            invoices = Invoice.objects.bulk_create([Invoice() for _ in range(min(137, count - len(got)))])
            got.extend(invoice.pk for invoice in invoices)
    elif mode == "bulk-default-atomic":
        got = bulk_in_transactions(Invoice, count)
    elif mode == "compat":  # django-sequences' API on this app's rows: gapless, queued on the row lock
        from django_segment_seq.compat.sequences import get_next_value

        got = [get_next_value(name) for _ in range(count)]
    elif mode == "compat-rollbacks":
        got = compat_with_rollbacks(name, count)
    elif mode in FLOW_MODES:
        got = FLOW_MODES[mode](name, count)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    with open(out, "w") as fh:
        fh.write("\n".join(map(str, got)))


class RolledBack(Exception):
    pass


def compat_with_rollbacks(name: str, count: int) -> list[int]:
    """Numbers of the compatible API kept by committed transactions; every third transaction rolls back."""
    from django.db import transaction

    from django_segment_seq.compat.sequences import get_next_value

    kept: list[int] = []
    attempt = 0
    while len(kept) < count:
        attempt += 1
        try:
            with transaction.atomic():
                number = get_next_value(name)
                if attempt % 3 == 0:
                    raise RolledBack
        except RolledBack:
            continue
        kept.append(number)
    return kept


def bulk_in_transactions(model, count: int) -> list[int]:
    """Two bulk_create calls per transaction, every third transaction rolled back; returns the committed keys.

    On SQLite the second call numbers its objects while the transaction holds the write lock.
    """
    from django.db import transaction

    got: list[int] = []
    for round_no in itertools.count(1):
        if len(got) >= count:
            return got
        try:
            with transaction.atomic():
                objs = model.objects.bulk_create([model() for _ in range(37)])
                objs += model.objects.bulk_create([model() for _ in range(113)])
                if round_no % 3 == 0:
                    raise RolledBack
        except RolledBack:
            continue
        got.extend(obj.pk for obj in objs)
    return got


def fake_clock(skew: float) -> None:
    """Run formatted fields on a clock that starts at SEGMENT_SEQ_TEST_CLOCK + skew seconds and moves
    SEGMENT_SEQ_TEST_TICK seconds at every reading, as servers with slightly different clocks would."""
    import itertools
    from datetime import datetime, timedelta

    from django.utils import timezone

    from django_segment_seq.flow import formats as formatting

    start = datetime.fromisoformat(os.environ["SEGMENT_SEQ_TEST_CLOCK"]) + timedelta(seconds=skew)
    tick = float(os.environ.get("SEGMENT_SEQ_TEST_TICK", "0"))
    readings = itertools.count()
    zone = timezone.get_default_timezone()
    formatting.now = lambda: timezone.localtime(start + timedelta(seconds=tick * next(readings)), zone)


def flow_daily(skew: str, count: int) -> list[int]:
    """DailyOrder saves across the clock's midnight; writes the digits of "OD<yyyymmdd><value:06d>"."""
    from tests.testapp.models import DailyOrder

    fake_clock(float(skew))
    return [int(DailyOrder.objects.create().order_no[2:]) for _ in range(count)]


def flow_gapless(skew: str, count: int) -> list[int]:
    """Gapless invoices in transactions, every third rolled back; writes the committed numbers only."""
    from django.db import transaction

    from tests.testapp.models import GaplessInvoice

    class Rollback(Exception):
        pass

    fake_clock(float(skew))
    got: list[int] = []
    attempt = 0
    while len(got) < count:
        attempt += 1
        try:
            with transaction.atomic():
                invoice = GaplessInvoice.objects.create()
                if attempt % 3 == 0:
                    raise Rollback
        except Rollback:
            continue
        got.append(int(invoice.number.rsplit("-", 1)[1]))
    return got


def flow_periodic(model_name: str, field: str):
    """A flow mode that saves `model_name` objects and writes each text as one (large) integer."""

    def flow(skew: str, count: int) -> list[int]:
        from tests.testapp import models

        model = getattr(models, model_name)
        fake_clock(float(skew))
        return [_encoded(getattr(model.objects.create(), field)) for _ in range(count)]

    return flow


def flow_fiscal(skew: str, count: int) -> list[int]:
    """Fiscal-year invoices: every other one dated the day before the clock's date, as if entered late."""
    from datetime import timedelta

    from django_segment_seq.flow import formats as formatting
    from tests.testapp.models import FiscalInvoice

    fake_clock(float(skew))
    got: list[int] = []
    for i in range(count):
        issued_on = None if i % 2 == 0 else (formatting.now() - timedelta(days=1)).date()
        got.append(_encoded(FiscalInvoice.objects.create(issued_on=issued_on).number))
    return got


def scope_save(companies: str, count: int) -> list[int]:
    """CompanyOrder saves for the companies (ids, comma-separated) in turn; writes company id * 10**12 + number."""
    from tests.testapp.models import CompanyOrder

    ids = [int(pk) for pk in companies.split(",")]
    offset = os.getpid() % len(ids)  # processes start on different companies
    got = []
    for i in range(count):
        pk = ids[(i + offset) % len(ids)]
        got.append(pk * SCOPE_FACTOR + CompanyOrder.objects.create(company_id=pk).number)
    return got


def scope_gapless(companies: str, count: int) -> list[int]:
    """Gapless CompanyReceipts for the companies in turn, every fourth rolled back; writes the committed ones."""
    from django.db import transaction

    from tests.testapp.models import CompanyReceipt

    class Rollback(Exception):
        pass

    ids = [int(pk) for pk in companies.split(",")]
    offset = os.getpid() % len(ids)
    got: list[int] = []
    attempt = 0
    while len(got) < count:
        attempt += 1
        pk = ids[(attempt + offset) % len(ids)]
        try:
            with transaction.atomic():
                receipt = CompanyReceipt.objects.create(company_id=pk)
                if attempt % 4 == 0:
                    raise Rollback
        except Rollback:
            continue
        got.append(pk * SCOPE_FACTOR + receipt.number)
    return got


def keyed_save(companies: str, count: int) -> list[int]:
    """KeyedInvoices (the number inside a composite key) for the companies in turn, by create(), save() of a new
    instance and bulk_create of three; writes company id * 10**12 + number."""
    from tests.testapp.models import KeyedInvoice

    ids = [int(pk) for pk in companies.split(",")]
    offset = os.getpid() % len(ids)
    got: list[int] = []
    for i in itertools.count():
        if len(got) >= count:
            return got
        pk = ids[(i + offset) % len(ids)]
        if i % 3 == 0:
            made = [KeyedInvoice.objects.create(company_id=pk)]
        elif i % 3 == 1:
            invoice = KeyedInvoice(company_id=pk)
            invoice.save()
            made = [invoice]
        else:
            made = KeyedInvoice.objects.bulk_create([KeyedInvoice(company_id=company) for company in ids * 2])
        got.extend(invoice.company_id * SCOPE_FACTOR + invoice.number for invoice in made)
    return got


SCOPE_FACTOR = 10**12


def code_text(sites: str, count: int) -> list[int]:
    """Order numbers made in code by a yearly, per-site rule, for the sites in turn; writes site * 10**12 + the number
    the text shows."""
    from django_segment_seq import NumberRule, next_text

    rule = NumberRule("code-order", format="{date:%Y}-{value:06d}", reset="yearly", scope="site")
    ids = [int(site) for site in sites.split(",")]
    offset = os.getpid() % len(ids)
    got = []
    for i in range(count):
        site = ids[(i + offset) % len(ids)]
        text = next_text(rule, scope={"site": site})
        got.append(site * SCOPE_FACTOR + int(text.split("-")[1]))
    return got


def shared_rule(path: str, count: int) -> list[int]:
    """Bills of company 1 made by the rule shared with CompanyBill.number: "code" by next_text() with the company's
    attname, "field" by saving bills, "both" in turn; writes the number each text shows."""
    from django_segment_seq import next_text
    from tests.testapp.models import COMPANY_BILL, Company, CompanyBill

    company = Company.objects.get(pk=1)
    got = []
    for i in range(count):
        by_code = path == "code" or (path == "both" and i % 2 == 0)
        if by_code:
            text = next_text(COMPANY_BILL, scope={"company_id": company.pk})
        else:
            text = CompanyBill.objects.create(company=company).number
        got.append(int(text.removeprefix("BILL-")))
    return got


def disguised_save(_name: str, count: int) -> list[int]:
    """Texts of concealed, Damm-checked orders and of MOD 97-10 creditor references, saved one by one."""
    from tests.testapp.models import CreditorReference, ShopOrder

    got = []
    for index in range(count):
        model = ShopOrder if index % 2 else CreditorReference
        got.append(_encoded(model.objects.create().number))
    return got


def _encoded(text: str) -> int:
    """A text as an integer, one to one, for the integer-per-line result files."""
    return int.from_bytes(text.encode(), "big")


def hold_then_take(name: str, count: int) -> list[int]:
    """One number (the process then holds the rest of its range), a file saying so, then, once the test's file
    allows it, count - 1 more: what a process running through a change of the row hands out."""
    import time
    from pathlib import Path

    from django_segment_seq import next_value
    from django_segment_seq.cache.prefetch import prefetcher

    got = [next_value(name)]
    # A background fetch the first number started moves the row too: the test reads the row once it has.
    if not prefetcher.drain(30):
        raise SystemExit("a background fetch did not end in 30 s")
    Path(os.environ["SEGMENT_SEQ_TEST_READY"]).write_text("holding")
    go = Path(os.environ["SEGMENT_SEQ_TEST_GO"])
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("never told to go on")
        time.sleep(0.02)
    return got + [next_value(name) for _ in range(count - 1)]


FLOW_MODES = {
    "flow-daily": flow_daily,
    "flow-gapless": flow_gapless,
    "flow-weekly": flow_periodic("WeeklyOrder", "code"),
    "flow-quarterly": flow_periodic("QuarterlyReport", "code"),
    "flow-shift": flow_periodic("ShiftTicket", "code"),
    "flow-fiscal": flow_fiscal,
    "scope-save": scope_save,
    "scope-gapless": scope_gapless,
    "disguised-save": disguised_save,
    "keyed-save": keyed_save,
    "code-text": code_text,
    "shared-rule": shared_rule,
    "hold-then-take": hold_then_take,
}


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
