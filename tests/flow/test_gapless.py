"""Gapless mode: numbers taken under a row lock in the caller's transaction; rollbacks give them back."""

import pytest
from django.db import transaction

from django_segment_seq import sequence_stats
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.testapp.models import CountedInvoice, GaplessInvoice, Order

pytestmark = pytest.mark.django_db(transaction=True)


class Rollback(Exception):
    pass


def test_rollback_gives_the_number_back(clock):
    with transaction.atomic():
        assert GaplessInvoice.objects.create().number == "INV-2026-00001"
    with pytest.raises(Rollback), transaction.atomic():
        assert GaplessInvoice.objects.create().number == "INV-2026-00002"
        raise Rollback
    with transaction.atomic():
        assert GaplessInvoice.objects.create().number == "INV-2026-00002"
    assert sorted(GaplessInvoice.objects.values_list("number", flat=True)) == ["INV-2026-00001", "INV-2026-00002"]


def test_rolled_back_savepoint_gives_the_number_back(clock):
    with transaction.atomic():
        GaplessInvoice.objects.create()
        with pytest.raises(Rollback), transaction.atomic():
            GaplessInvoice.objects.create()
            raise Rollback
        assert GaplessInvoice.objects.create().number == "INV-2026-00002"


def test_outside_a_transaction_each_number_commits_at_once(clock):
    assert [GaplessInvoice.objects.create().number for _ in range(3)] == [
        "INV-2026-00001",
        "INV-2026-00002",
        "INV-2026-00003",
    ]
    assert Sequence.objects.get(name="gapless-invoice@2026").value == 3


def test_step_and_cache_are_not_used(clock):
    Sequence.objects.create(name="counted-invoice", step=1000)
    with transaction.atomic():
        numbers = [CountedInvoice.objects.create().number for _ in range(3)]
    assert numbers == [1, 2, 3]
    assert Sequence.objects.get(name="counted-invoice").value == 3
    assert not any(name == "counted-invoice" for _, name in sequence_stats())


def test_each_year_restarts(clock):
    clock.set("2026-12-31 23:59:59")
    with transaction.atomic():
        GaplessInvoice.objects.create()
    clock.advance(seconds=1)
    with transaction.atomic():
        assert GaplessInvoice.objects.create().number == "INV-2027-00001"


def test_bulk_create_numbers_in_one_transaction(clock):
    invoices = GaplessInvoice.objects.bulk_create([GaplessInvoice() for _ in range(5)])
    assert sorted(i.number for i in invoices) == [f"INV-2026-{n:05d}" for n in range(1, 6)]


def test_concurrent_transactions_with_rollbacks_leave_no_gap(run_workers):
    """Four processes commit 25 invoices each and roll back every third attempt: committed numbers are 1..100."""
    results = run_workers([("flow-gapless", "0", 25)] * 4, SEGMENT_SEQ_TEST_CLOCK="2026-06-01T12:00:00+02:00")
    numbers = assert_unique([n for part in results for n in part], 100)
    assert sorted(numbers) == list(range(1, 101))
    stored = assert_unique(GaplessInvoice.objects.values_list("number", flat=True), 100)
    assert sorted(stored) == [f"INV-2026-{n:05d}" for n in range(1, 101)]
    assert Sequence.objects.get(name="gapless-invoice@2026").value == 100


def test_first_use_inside_a_transaction_that_already_wrote(clock):
    """On SQLite the transaction holds the only write lock: the period row is created inside it."""
    with pytest.raises(Rollback), transaction.atomic():
        Order.objects.create(order_no=1)  # a write: on SQLite it takes the only write lock
        numbers = [GaplessInvoice.objects.create().number for _ in range(3)]
        assert numbers == ["INV-2026-00001", "INV-2026-00002", "INV-2026-00003"]
        raise Rollback
    with transaction.atomic():
        Order.objects.create(order_no=1)  # a write: on SQLite it takes the only write lock
        assert GaplessInvoice.objects.create().number == "INV-2026-00001"
    assert Sequence.objects.get(name="gapless-invoice@2026").value == 1


def test_formatted_cached_field_inside_a_transaction_that_already_wrote(clock):
    from tests.testapp.models import DailyOrder

    with transaction.atomic():
        Order.objects.create(order_no=1)  # a write: on SQLite it takes the only write lock
        codes = [DailyOrder.objects.create().order_no for _ in range(3)]
    assert_unique(codes, 3)
    assert Sequence.objects.get(name="daily-order@2026-11-22").max_value == 999_999
