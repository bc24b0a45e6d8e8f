"""PostgreSQL and MariaDB: numbers taken inside a transaction that already holds the sequence row's lock.

The private allocation connection would wait for a lock the caller's own transaction holds until
that transaction ends, which it never does while the caller waits for its number. Each scenario
runs in a worker process whose timeout turns such a hang into a failure.
"""

import pytest
from django.conf import settings

from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.scenarios import run_scenario
from tests.testapp.models import CountedInvoice, Order

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        settings.BACKEND == "sqlite",
        reason="row locks: SQLite has only its file write lock, covered in test_transactions and test_sqlite_*",
    ),
]

# Long enough that a lock wait of the server (50 s on MariaDB) is not mistaken for a deadlock; the
# scenarios should finish within seconds.
HANG_TIMEOUT = 60


def later_numbers(run_workers) -> list[int]:
    """Numbers of "order" that other processes take after the scenario."""
    results = run_workers([("save", "order", 30), ("value", "order", 30)], timeout=HANG_TIMEOUT)
    return [n for part in results for n in part]


@pytest.mark.parametrize("variant", ["create", "migration"])
def test_row_created_in_the_callers_transaction(run_workers, variant):
    """`with atomic(): Sequence.objects.create(name="order", step=10); Order.objects.create()`, also in a migration."""
    result = run_scenario("caller-holds-row", variant, timeout=HANG_TIMEOUT)
    assert len(result["in_transaction"]) == 3
    assert Sequence.objects.filter(name="order").exists()
    assert_unique(result["in_transaction"] + later_numbers(run_workers))
    assert_unique(Order.objects.values_list("order_no", flat=True), 3 + 30)


@pytest.mark.parametrize("variant", ["update", "select-for-update"])
def test_row_edited_or_locked_in_the_callers_transaction(run_workers, variant):
    """The caller's transaction updates the row (or locks it with select_for_update()) before taking numbers."""
    Sequence.objects.create(name="order", step=10)
    result = run_scenario("caller-holds-row", variant, timeout=HANG_TIMEOUT)
    assert len(result["in_transaction"]) == 3
    assert_unique(result["in_transaction"] + later_numbers(run_workers))
    assert_unique(Order.objects.values_list("order_no", flat=True), 3 + 30)


def test_row_created_in_a_transaction_that_rolls_back(run_workers):
    """The row and the orders vanish together; the rows stored afterwards never repeat a number."""
    result = run_scenario("caller-holds-row", "rollback", timeout=HANG_TIMEOUT)
    assert len(result["in_transaction"]) == 3 and len(result["after"]) == 3
    later_numbers(run_workers)
    assert_unique(Order.objects.values_list("order_no", flat=True), 3 + 30)


def test_next_value_on_a_gapless_sequence_inside_the_transaction_that_holds_its_row(run_workers):
    """A gapless save locks its row until commit; next_value() of it in the same transaction must not wait for that."""
    Sequence.objects.create(name="counted-invoice", step=10)
    result = run_scenario("caller-holds-row", "gapless", timeout=HANG_TIMEOUT)
    stored = list(CountedInvoice.objects.values_list("number", flat=True))
    assert len(stored) == 1
    others = run_workers([("value", "counted-invoice", 5)], timeout=HANG_TIMEOUT)[0]
    later = [CountedInvoice.objects.create().number for _ in range(3)]
    assert_unique(result["in_transaction"][1:] + stored + others + later)
