"""Callers' transactions: a rollback never gives a cached range back, and SQLite's single writer never deadlocks."""

import threading

import pytest
from django.db import connection, transaction

from django_segment_seq import next_value, next_values, sequence_stats
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.testapp.models import Invoice, Order

pytestmark = pytest.mark.django_db(transaction=True)


class Boom(Exception):
    pass


@pytest.mark.parametrize("step", [1000, 7])
def test_rollback_then_other_processes_allocate(run_workers, step):
    """Numbers handed out inside rolled-back transactions must not come back to other processes.

    With step 7 the cache runs dry in the middle of the transactions. On SQLite the caller's own
    write lock then forces the block into its transaction (see README), so there only the stored
    rows are promised unique; everywhere else every number handed out is.
    """
    Sequence.objects.create(name="order", step=step)
    kept: list[int] = []
    for _ in range(5):
        with pytest.raises(Boom), transaction.atomic():
            kept.extend(Order.objects.create().order_no for _ in range(30))
            kept.append(next_value("order"))
            raise Boom
    results = run_workers([("save", "order", 200)] * 3 + [("value", "order", 200)])
    ours_after = [Order.objects.create().order_no for _ in range(50)]
    others = [n for part in results for n in part]
    assert_unique(Order.objects.values_list("order_no", flat=True), 3 * 200 + 50)
    assert_unique(others + ours_after)
    in_transaction = sequence_stats()[("default", "order")].fetched_in_caller_transaction
    if connection.vendor == "sqlite" and step == 7:
        assert in_transaction > 0
    else:
        assert in_transaction == 0
        assert_unique(kept + ours_after + others)


def test_rollback_does_not_rewind_the_table():
    Sequence.objects.create(name="order", step=10)
    with pytest.raises(Boom), transaction.atomic():
        Order.objects.create()
        raise Boom
    if connection.vendor != "sqlite":
        # The range was committed on the allocator's own connection.
        assert Sequence.objects.get(name="order").value == 10
    assert Order.objects.create().order_no >= 2


def test_sqlite_save_inside_a_writing_transaction_neither_blocks_nor_fails():
    """The caller already holds SQLite's write lock; numbers still come, and a rollback repeats none."""
    Sequence.objects.create(name="order", step=5)
    Sequence.objects.create(name="invoice", step=5)
    with transaction.atomic():
        Invoice.objects.create(id=9999)  # the caller now holds the write lock
        committed = [Order.objects.create().order_no for _ in range(12)]
        committed += [Invoice.objects.create().pk for _ in range(3)]
    with pytest.raises(Boom), transaction.atomic():
        Invoice.objects.create(id=8888)
        rolled_back = [Order.objects.create().order_no for _ in range(12)]
        raise Boom
    after = [Order.objects.create().order_no for _ in range(12)]
    orders = list(Order.objects.values_list("order_no", flat=True))
    assert_unique(orders, 24)
    assert_unique(committed[:12] + after)
    assert set(rolled_back).isdisjoint(committed[:12])


def test_savepoint_rollback_inside_transaction_repeats_nothing_stored():
    Sequence.objects.create(name="order", step=3)
    with transaction.atomic():
        Order.objects.create()
        for _ in range(4):
            with pytest.raises(Boom), transaction.atomic():
                Order.objects.create()
                Order.objects.create()
                raise Boom
            Order.objects.create()
    assert_unique(Order.objects.values_list("order_no", flat=True), 5)


def test_next_values_inside_a_transaction():
    Sequence.objects.create(name="s", step=10)
    with transaction.atomic():
        Order.objects.create(order_no=1)
        first = next_values("s", 4)
        second = next_values("s", 25)
    assert len(first) == 4 and len(second) == 25
    assert_unique(list(first) + list(second))


def test_threads_while_one_holds_a_sqlite_write_transaction():
    """Another thread waiting on the write lock must not hold up the writer's own numbers."""
    Sequence.objects.create(name="order", step=2)
    Order.objects.create()  # caches 2
    next_value("order")  # uses it up
    other: list[int] = []
    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            other.extend(next_value("order") for _ in range(3))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    with transaction.atomic():
        Order.objects.create(order_no=10_000)
        thread = threading.Thread(target=other_thread)
        thread.start()
        mine = [Order.objects.create().order_no for _ in range(5)]
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert not errors, errors
    assert_unique([1, 2, *mine, *other])
    assert sequence_stats()[("default", "order")].handed_out == 2 + 5 + 3
