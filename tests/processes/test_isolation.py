"""Allocation under each isolation level set in the database OPTIONS, with contended ranges and caller transactions."""

import pytest
from django.conf import settings

from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.testapp.models import Order

LEVELS = {
    "mariadb": ["repeatable read", "read committed"],
    # "default …" also makes it the server's default, so the allocator's autocommit statements run under it.
    "postgres": ["read committed", "serializable", "default serializable", "default repeatable read"],
}

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(settings.BACKEND not in LEVELS, reason="SQLite has no isolation levels to choose from"),
]


@pytest.mark.parametrize("level", LEVELS.get(settings.BACKEND, ["-"]))
def test_contended_allocation_under_isolation_level(stress_workers, level):
    """Step 2 and six processes: nearly every range fetch races; some callers allocate inside their transactions."""
    Sequence.objects.create(name="order", step=2)
    for i in range(6):
        options = ["--rollback-rate", "0.3"] if i % 2 else []
        stress_workers.start(400, *options, SEGMENT_SEQ_TEST_ISOLATION=level)
    stress_workers.wait()
    committed = stress_workers.numbers()
    assert len(committed) >= 6 * 400
    assert_unique(committed + stress_workers.rolled_back())
    assert_unique(Order.objects.values_list("order_no", flat=True))
    assert stress_workers.figures()["failures"] == 0, "isolation conflicts must not count as database failures"
