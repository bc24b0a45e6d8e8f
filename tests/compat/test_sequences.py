"""django-sequences' API on this app's rows, tested as django-sequences tests its own: one connection in autocommit
and in a transaction, two connections on first and later access with commit, rollback and nowait, and
different sequences, on every backend."""

import contextlib
import threading

import pytest
from django.db import DatabaseError, connection, connections, transaction

from django_segment_seq.compat import sequences
from django_segment_seq.compat.sequences import Sequence, delete, get_last_value, get_next_value, get_next_values
from django_segment_seq.compat.wrap import ResetValueConflict
from django_segment_seq.db.table import Sequence as SequenceRow
from tests.conftest import assert_unique

pytestmark = pytest.mark.django_db(transaction=True)
ON_SQLITE = connection.vendor == "sqlite"


def test_first_values_in_autocommit():
    assert get_last_value() is None
    assert [get_next_value() for _ in range(3)] == [1, 2, 3]
    assert get_last_value() == 3
    assert get_next_value(initial_value=10) == 4  # initial_value only counts when the row is created


def test_initial_value_and_reset_value():
    assert [get_next_value("r", initial_value=0, reset_value=3) for _ in range(5)] == [0, 1, 2, 0, 1]
    with pytest.raises(ValueError, match="reset_value must be greater than initial_value"):
        get_next_value("bad", initial_value=5, reset_value=5)


def test_a_wrap_unlike_the_row_s_is_refused_and_takes_nothing():
    assert [get_next_value("r4", reset_value=4) for _ in range(2)] == [1, 2]
    # Before: each of these was handed the row's own next number, 3, without a word.
    with pytest.raises(ResetValueConflict, match=r"reset_value=5, but its row has min_value 1, max_value 3"):
        get_next_value("r4", reset_value=5)
    with pytest.raises(ValueError, match="initial_value=0"):
        Sequence("r4", initial_value=0, reset_value=4).get_next_value()
    SequenceRow.objects.create(name="capped", max_value=99)
    with pytest.raises(ResetValueConflict, match="cycle off"):
        get_next_value("capped", reset_value=100)
    assert (get_last_value("r4"), get_last_value("capped")) == (2, None)
    assert get_next_value("r4", reset_value=4) == 3


def test_a_row_without_a_wrap_takes_the_call_s():
    assert get_next_values(5, "plain") == range(1, 6)
    # django-sequences keeps no wrap: called with one, it wraps where the call says, whatever came before.
    assert [get_next_value("plain", reset_value=4) for _ in range(4)] == [1, 2, 3, 1]
    row = SequenceRow.objects.get(name="plain")
    assert (row.min_value, row.max_value, row.cycle) == (1, 3, True)


def test_batches():
    assert get_next_values(3, "batch") == range(1, 4)
    assert get_next_values(2, "batch") == range(4, 6)
    assert list(get_next_values(0, "batch")) == []
    assert get_last_value("batch") == 5
    assert get_next_values(4, "other", initial_value=10) == range(10, 14)


def test_in_a_transaction_a_rollback_gives_the_numbers_back():
    with transaction.atomic():
        assert get_next_value("t") == 1
    with pytest.raises(RuntimeError), transaction.atomic():
        assert get_next_value("t") == 2
        raise RuntimeError
    assert get_next_value("t") == 2


def test_delete_says_whether_there_was_a_row():
    assert delete("gone") is False
    get_next_value("gone")
    assert delete("gone") is True
    assert get_last_value("gone") is None
    assert get_next_value("gone") == 1


def test_the_class_and_iteration():
    seq = Sequence("cls", initial_value=5)
    assert (next(seq), seq.get_next_value(), list(seq.get_next_values(2))) == (5, 6, [7, 8])
    assert seq.get_last_value() == 8
    assert [value for value, _ in zip(seq, range(2), strict=False)] == [9, 10]
    assert seq.delete() is True
    with pytest.raises(ValueError):
        Sequence("bad", initial_value=2, reset_value=1)


def test_different_sequences_count_apart_and_are_rows_of_this_app():
    assert (get_next_value("a"), get_next_value("b"), get_next_value("a")) == (1, 1, 2)
    row = SequenceRow.objects.get(name="a")
    assert (row.value, row.min_value, row.cycle) == (2, 1, False)
    assert SequenceRow.objects.get(name="b").value == 1


def _in_thread(target, *args, **kwargs):
    """Run `target` on a connection of its own; its result or error, once it has ended."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = target(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("first_access", [True, False])
@pytest.mark.parametrize("commit", [True, False])
def test_a_second_connection_queues_behind_the_first(first_access, commit):
    if not first_access:
        get_next_value("q")
    base = 0 if first_access else 1
    with pytest.raises(RuntimeError) if not commit else contextlib.nullcontext(), transaction.atomic():
        assert get_next_value("q") == base + 1
        thread, outcome = _in_thread(get_next_value, "q")
        thread.join(0.5)
        assert thread.is_alive(), "the second caller did not wait for the first one's transaction"
        if not commit:
            raise RuntimeError
    thread.join(30)
    assert not thread.is_alive()
    assert outcome == {"value": base + 2 if commit else base + 1}


@pytest.mark.skipif(ON_SQLITE, reason="SQLite has no row locks: nowait has nothing to refuse")
def test_nowait_on_first_access_does_as_django_sequences():
    """django-sequences' test_first_access_nowait: the first transaction has just created the row when a second
    connection asks with nowait=True. On MariaDB that is a DatabaseError at once (before: the second waited for
    the first to commit, then got 2, or for LOCK_TIMEOUT); on PostgreSQL it gets the next number after the commit."""
    on_mariadb = connection.vendor == "mysql"
    with transaction.atomic():
        assert get_next_value("first-nw") == 1
        thread, outcome = _in_thread(get_next_value, "first-nw", nowait=True)
        thread.join(1 if on_mariadb else 0.5)  # LOCK_TIMEOUT is 2 s
        if on_mariadb:
            assert not thread.is_alive(), "the nowait caller waited for the first one's transaction"
            assert isinstance(outcome.get("error"), DatabaseError), outcome
        else:
            assert thread.is_alive(), "the nowait caller did not wait for the row's insert to commit"
    thread.join(30)
    assert not thread.is_alive()
    if not on_mariadb:
        assert outcome == {"value": 2}
    assert get_next_value("first-nw") == (2 if on_mariadb else 3)


@pytest.mark.skipif(ON_SQLITE, reason="SQLite has no row locks: nowait has nothing to refuse")
def test_nowait_fails_at_once_on_a_row_another_transaction_holds():
    get_next_value("nw")
    with transaction.atomic():
        get_next_value("nw")
        thread, outcome = _in_thread(get_next_value, "nw", nowait=True)
        thread.join(30)
        assert isinstance(outcome.get("error"), DatabaseError)
    assert get_next_value("nw", nowait=True) == 3


def test_many_threads_queue_for_one_row_and_get_every_number_once():
    results: list[int] = []
    lock = threading.Lock()

    def take():
        for _ in range(20):
            number = get_next_value("many")
            with lock:
                results.append(number)

    threads = [_in_thread(take)[0] for _ in range(4)]
    for thread in threads:
        thread.join(120)
    assert_unique(results)
    assert sorted(results) == list(range(1, 81))


def test_the_module_names_django_sequences_api():
    assert set(sequences.__all__) == {"Sequence", "delete", "get_last_value", "get_next_value", "get_next_values"}
