"""SQLite, one shared file (the default set-up): callers' read-then-write transactions while ranges are fetched."""

import pytest
from django.conf import settings
from django.db import OperationalError, transaction
from django.test import override_settings

from django_segment_seq import next_value, wait_for_prefetch
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.scenarios import run_scenario
from tests.testapp.models import Order

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(settings.BACKEND != "sqlite", reason="SQLite's single write lock per file"),
]

PREFETCH_ON = {"PREFETCH": True, "PREFETCH_AT": 0.2, "ADAPTIVE_STEP": True, "MAX_BACKOFF": 0.01}


@override_settings(SEGMENT_SEQ=PREFETCH_ON)
def test_read_then_write_transactions_are_not_locked_out_by_prefetch():
    """A background fetch must not take the write lock between the caller's read and its write.

    A deferred transaction that has read holds a shared lock; if another connection of the same
    process writes meanwhile, SQLite refuses the caller's write at once ("database is locked").
    """
    Sequence.objects.create(name="order", step=2)
    Sequence.objects.create(name="other", step=2)
    errors = []
    for _ in range(20):
        try:
            with transaction.atomic():
                list(Order.objects.all()[:1])
                next_value("other")
                Order.objects.create()
        except OperationalError as exc:
            errors.append(str(exc))
    wait_for_prefetch(10)
    assert not errors, f"{len(errors)} of 20 transactions failed: {errors[:3]}"
    assert_unique(Order.objects.values_list("order_no", flat=True), 20)


@pytest.mark.processes
def test_fetch_inside_a_read_then_write_transaction_in_wal_mode():
    """In WAL mode a range committed by another connection after the caller's read makes the caller's snapshot stale.

    The caller's write then fails with SQLITE_BUSY_SNAPSHOT; a fetch needed inside such a
    transaction must not cause that. Runs on a fresh file of its own, switched to WAL.
    """
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        result = run_scenario("wal-read-then-write", 5, SEGMENT_SEQ_TEST_DB_NAME=f"{directory}/wal.sqlite3")
    assert result["journal_mode"] == "wal"
    assert not result["errors"], f"{len(result['errors'])} of 5 transactions failed: {result['errors'][:2]}"
    assert_unique(result["numbers"], 5)
