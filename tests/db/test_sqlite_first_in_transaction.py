"""SQLite, one shared file: numbers taken first thing in a transaction while another process holds the write lock."""

import pytest
from django.conf import settings
from django.db import connection, transaction

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.scenarios import run_scenario, start_holder

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(settings.BACKEND != "sqlite", reason="SQLite's single write lock per file"),
]


class Boom(Exception):
    pass


@pytest.mark.processes
def test_number_taken_while_another_process_writes_survives_the_callers_rollback():
    """The caller's transaction holds no lock yet: the range can be committed on its own once the other writer is done.

    Waiting ~0.5 s for another process's write lock is not the caller's own lock, so the block
    must not be taken inside the caller's transaction, where a rollback would give it back.
    """
    Sequence.objects.create(name="x", step=10)
    holder = start_holder("hold-sqlite-lock", connection.settings_dict["NAME"], 0.5)
    try:
        with pytest.raises(Boom), transaction.atomic():
            first = next_value("x")
            raise Boom
    finally:
        holder.wait(timeout=30)
    again = [next_value("x") for _ in range(3)]
    assert_unique([first, *again], 4)


@pytest.mark.processes
def test_check_warns_when_sqlite_transactions_take_the_write_lock_at_begin():
    """With transaction_mode IMMEDIATE on the file holding the Sequence table, no range can commit on its own.

    The check must say so and point to SequenceRouter (a file of its own for the table), and stay
    silent in the default (DEFERRED) mode.
    """
    import django

    if django.VERSION < (5, 1):
        pytest.skip("OPTIONS['transaction_mode'] needs Django 5.1")
    messages = run_scenario("checks", SEGMENT_SEQ_TEST_SQLITE_TRANSACTION_MODE="IMMEDIATE")["messages"]
    warnings = [m for m in messages if m["id"].startswith("django_segment_seq.W") and "SequenceRouter" in m["hint"]]
    assert warnings, f"no django_segment_seq warning pointing to SequenceRouter among {messages}"
    assert all(m["level"] == 30 for m in warnings)  # checks.WARNING
    default_mode = run_scenario("checks")["messages"]
    assert not [m for m in default_mode if m["id"].startswith("django_segment_seq.W")]
