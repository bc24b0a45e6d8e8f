"""Numbers taken while the caller's own transaction is open, as legacy code, data migrations and tests open it.

Each case is one a user met: a raw BEGIN outside atomic(), a transaction that wrote another
Sequence row, reset_sequences() before a scoped save, and one transaction creating a thousand scope
rows. Other processes take numbers of the same rows, and everything handed out is checked for repeats.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F

from django_segment_seq import next_value, next_values
from django_segment_seq.conf import app_settings
from django_segment_seq.models import Sequence
from django_segment_seq.testing import reset_sequences
from tests.conftest import ROOT, assert_unique, worker_env
from tests.support.workers import SCOPE_FACTOR
from tests.testapp.models import Company, CompanyOrder

pytestmark = pytest.mark.django_db(transaction=True)

on_server = pytest.mark.skipif(
    settings.BACKEND == "sqlite",
    reason="SQLite: a transaction that wrote anything holds the one write lock, so others wait for it by design",
)


def raw(sql: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql)


@pytest.mark.parametrize("begin", ["BEGIN", "START TRANSACTION"])
def test_raw_transaction_rolled_back_repeats_nothing(run_workers, begin):
    """MariaDB kept handing out a range its rolled-back raw transaction had taken on the caller's connection."""
    if settings.BACKEND == "sqlite" and begin != "BEGIN":
        pytest.skip("SQLite has no START TRANSACTION")
    Sequence.objects.create(name="x", step=10)
    connection.ensure_connection()
    raw(begin)
    try:
        in_raw_transaction = [next_value("x") for _ in range(3)]
    finally:
        raw("ROLLBACK")
    after = [next_value("x") for _ in range(20)]
    others = run_workers([("value", "x", 30), ("value", "x", 30)], timeout=120)
    assert_unique(in_raw_transaction + after + [n for part in others for n in part])


@on_server
@pytest.mark.parametrize("write", ["update-other-row", "save-other-row-value"])
def test_writing_another_row_holds_nothing_of_this_one(tmp_path, write):
    """PostgreSQL took a busy row into a transaction that had written another Sequence row, and held it there.

    Three processes take numbers of x throughout, while this transaction, which wrote another row
    first, keeps taking numbers of x too; none of them may end up waiting for this transaction.
    """
    Sequence.objects.create(name="x", step=5)
    other = Sequence.objects.create(name="other", step=10)
    outs = [tmp_path / f"worker{i}.txt" for i in range(3)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.workers", "value", "x", "400", str(out)],
            cwd=ROOT,
            env=worker_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for out in outs
    ]
    mine: list[int] = []
    try:
        with transaction.atomic():
            if write == "update-other-row":
                Sequence.objects.filter(pk=other.pk).update(step=F("step"))
            else:
                other.value = 50
                other.save(update_fields=["value"])
            deadline = time.monotonic() + 120
            while any(proc.poll() is None for proc in procs):
                mine.extend(next_values("x", 3))
                assert time.monotonic() < deadline, "the workers did not finish"
                time.sleep(0.005)
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, f"a worker failed while this transaction was open:\n{err[-3000:]}"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    others = [int(line) for out in outs for line in out.read_text().split()]
    assert_unique(mine + others, len(mine) + 1200)


def test_reset_then_scoped_save_in_one_transaction(run_workers):
    """MariaDB waited LOCK_TIMEOUT, then failed, though the caller's transaction held the reset scope rows."""
    companies = [Company.objects.create(code=f"C{i}") for i in range(2)]
    for company in companies:
        CompanyOrder.objects.create(company=company)
    with transaction.atomic():
        CompanyOrder.objects.all().delete()
        reset_sequences("company-order")
        started = time.monotonic()
        numbers = [CompanyOrder.objects.create(company=company).number for company in companies]
        elapsed = time.monotonic() - started
    assert numbers == [1, 1]
    assert elapsed < app_settings()["LOCK_TIMEOUT"], f"the saves took {elapsed:.2f} s"
    ids = ",".join(str(company.pk) for company in companies)
    others = run_workers([("scope-save", ids, 20), ("scope-save", ids, 20)], timeout=120)
    stored = [order.company_id * SCOPE_FACTOR + order.number for order in CompanyOrder.objects.all()]
    assert_unique(stored, 2 + 40)
    assert set(n for part in others for n in part) <= set(stored)


def test_a_thousand_scope_rows_created_in_one_transaction(run_workers):
    """A data migration numbering existing companies: each new scope row waited LOCK_TIMEOUT on the base row."""
    count = 1000
    limit = 60.0  # each row waited LOCK_TIMEOUT before (2,000 s in all); 1 to 4 s now on each backend
    started = time.monotonic()
    with transaction.atomic():
        Sequence.objects.create(name="company-order", step=10)
        companies = Company.objects.bulk_create([Company(code=f"C{i}") for i in range(count)])
        numbers = []
        for company in companies:
            numbers.append(CompanyOrder.objects.create(company=company).number)
            elapsed = time.monotonic() - started
            assert elapsed < limit, f"{len(numbers)} of {count} scope rows took {elapsed:.1f} s"
    assert numbers == [1] * count
    assert Sequence.objects.filter(base_name="company-order").count() == count
    ids = ",".join(str(company.pk) for company in companies[:5])
    others = run_workers([("scope-save", ids, 30), ("scope-save", ids, 30)], timeout=120)
    stored = [order.company_id * SCOPE_FACTOR + order.number for order in CompanyOrder.objects.all()]
    assert_unique(stored, count + 60)
    assert len([n for part in others for n in part]) == 60
