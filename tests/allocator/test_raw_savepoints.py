"""Raw transaction control inside a transaction that holds the row: a number the database undid is never used."""

import pytest
from django.db import connection, transaction

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.scenarios import run_scenario

pytestmark = pytest.mark.django_db(transaction=True)


def hold_row(name: str) -> None:
    """Make the caller's transaction hold the row, as a view under select_for_update() does (SQLite: a write)."""
    if connection.vendor == "sqlite":
        Sequence.objects.filter(name=name).update(step=10)  # takes the file's write lock
    else:
        Sequence.objects.select_for_update().get(name=name)


@pytest.mark.processes
def test_a_block_undone_by_a_raw_rollback_to_savepoint_is_never_handed_out():
    """Before: 2 and 3 came from a block the database had undone; the row stayed at 0 and another process got them."""
    Sequence.objects.create(name="sp", step=10)
    ours: list[int] = []
    with transaction.atomic():
        hold_row("sp")
        with connection.cursor() as cursor:
            cursor.execute("SAVEPOINT raw_s")
            undone = next_value("sp")  # a block taken inside the transaction...
            cursor.execute("ROLLBACK TO SAVEPOINT raw_s")  # ...and undone by the database
        ours += [next_value("sp"), next_value("sp")]
    ours += [next_value("sp") for _ in range(12)]  # after the commit, from this process's cache or new ranges
    stored = Sequence.objects.get(name="sp").value
    assert stored >= max(ours[:2]), f"the row stands at {stored} below numbers handed out in its transaction {ours}"
    theirs = run_scenario("take", "sp", 25)["numbers"]
    assert_unique(ours + theirs, 14 + 25)
    assert undone >= 1


@pytest.mark.processes
def test_raw_savepoint_released_keeps_the_numbers_of_the_transaction():
    """A released raw savepoint keeps its writes: the numbers taken in it stand, and nobody gets them again."""
    Sequence.objects.create(name="sp2", step=10)
    with transaction.atomic():
        hold_row("sp2")
        with connection.cursor() as cursor:
            cursor.execute("SAVEPOINT raw_r")
            ours = [next_value("sp2"), next_value("sp2")]
            cursor.execute("RELEASE SAVEPOINT raw_r")
        ours.append(next_value("sp2"))
    theirs = run_scenario("take", "sp2", 15)["numbers"]
    assert_unique(ours + theirs, 3 + 15)
    assert ours == sorted(ours)
