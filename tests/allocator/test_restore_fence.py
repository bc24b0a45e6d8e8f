"""The restore fence: a row read from another table than the one it was last written in (a restore re-created the
table), or found behind what this process wrote itself (a restore put it back), skips FAILOVER_SKIP, and past every
number this process held, before its next block. The real dump and restore tools: tests/processes/test_restores.py."""

import time

import pytest
from django.db import connections, transaction

from django_segment_seq import SequenceUnavailable, clear_cache, next_value
from django_segment_seq.allocator import seen
from django_segment_seq.allocator.blocks import Row, failover_skip, restore_skip
from django_segment_seq.conf import app_settings
from django_segment_seq.db.history import same_history, server_history, with_table
from django_segment_seq.models import Sequence

SKIP = 1_000


def test_a_history_names_its_table_and_only_another_table_of_the_same_server_differs():
    assert with_table("pg:1:1", "16421") == "pg:1:1/16421"
    assert with_table("pg:1:1", "") == "pg:1:1" and with_table("", "7") == ""
    assert same_history("pg:1:1/16421", "pg:1:1/16421")
    assert same_history("pg:1:1/16421+standby", "pg:1:1/16421")  # a range a standby confirmed: the same server
    assert not same_history("pg:1:1/16421+standby", "pg:1:2/16421+standby")
    assert not same_history("pg:1:1/16421", "pg:1:1/17000")  # DROP and CREATE: pg_restore --clean, mysql < dump
    assert not same_history("pg:1:1/16421", "pg:1:2/16421")  # a promotion
    assert same_history("pg:1:1", "pg:1:1/16421")  # written before tables were recorded: no skip at the upgrade
    assert same_history("mariadb:1/40", "mariadb:1")  # a user without PROCESS reads no table id
    # Each Galera node numbers its tables its own way: the table is not compared there.
    assert same_history("galera:5b8c/40", "galera:5b8c/41")


def test_another_table_skips_like_a_failover():
    row = Row(100, 10, 1, 10**9, False, 3, "pg:1:1/16421", "17000")
    assert failover_skip(row, with_table("pg:1:1", row.table), SKIP) == SKIP
    assert failover_skip(row._replace(table="16421"), "pg:1:1/16421", SKIP) == 0


def test_a_restored_row_skips_past_every_number_this_process_held():
    row = Row(100, 10, 1, 10**9, False, 3)
    assert restore_skip(row, 50, SKIP) == SKIP
    assert restore_skip(row, 100 + 5 * SKIP, SKIP) == 5 * SKIP  # the process held more than FAILOVER_SKIP past it
    capped = row._replace(max_value=999)
    assert restore_skip(capped, 500, SKIP) == 449  # half of what is left, as a failover
    assert restore_skip(capped, 900, SKIP) == 800  # but never below a number the process held
    assert restore_skip(row._replace(cycle=True), 100 + 5 * SKIP, SKIP) == SKIP  # a cycling row repeats by design


@pytest.mark.django_db(transaction=True)
def test_a_running_process_that_finds_the_row_behind_its_own_write_skips(caplog):
    Sequence.objects.create(name="restored", step=10)
    assert [next_value("restored") for _ in range(10)] == list(range(1, 11))
    assert next_value("restored") == 11  # a second range: the row at 20, version 2
    # A data-only restore of a backup taken after the first range: the same table, its row as it was then.
    Sequence.objects.filter(name="restored").update(value=10, version=1)
    for _ in range(9):
        next_value("restored")  # the rest of this process's cached range, 12 to 20, taken before the restore
    skip = app_settings()["FAILOVER_SKIP"]
    assert next_value("restored") == 10 + skip + 1
    assert "below version 2 this process left it at (restored from a backup)" in caplog.text
    assert next_value("restored") == 10 + skip + 2  # once: the row is this process's own again


@pytest.mark.django_db(transaction=True)
def test_a_row_read_from_another_table_skips_once(backend):
    if backend == "sqlite":
        pytest.skip("SQLite's table has no identity the app reads")
    Sequence.objects.create(name="moved", step=10)
    assert next_value("moved") == 1
    stored = Sequence.objects.get(name="moved").history
    server, _, table = stored.partition("/")
    assert server == server_history(connections["default"]) and table.isdigit()
    # The row as a restore into a re-created table brings it back: written in a table that is gone.
    Sequence.objects.filter(name="moved").update(history=f"{server}/{int(table) + 1}")
    clear_cache()
    skip = app_settings()["FAILOVER_SKIP"]
    assert next_value("moved") == 10 + skip + 1
    assert Sequence.objects.get(name="moved").history == stored  # this table's identity again
    clear_cache()
    assert next_value("moved") == 10 + skip + 11


@pytest.mark.django_db(transaction=True)
def test_a_row_deleted_from_the_same_table_is_made_anew():
    """A test's flush or a reset deletes the row on purpose: the table is the same, so the row is made anew."""
    Sequence.objects.create(name="gone", step=2)
    assert [next_value("gone"), next_value("gone")] == [1, 2]
    Sequence.objects.filter(name="gone").delete()
    assert next_value("gone") == 1  # no wait and no skip: the process was not restored, its row was deleted


@pytest.mark.django_db(transaction=True)
def test_a_row_missing_from_a_table_made_since_is_not_made_again(settings, backend):
    """A restore re-creates the table, then loads its rows: a row a process used, missing from a table made since
    that process took its range, is waited for (then SequenceUnavailable), never made again beside the restore's."""
    if backend == "sqlite":
        pytest.skip("SQLite's table has no identity the app reads")
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.3}
    Sequence.objects.create(name="gone", step=2)
    assert [next_value("gone"), next_value("gone")] == [1, 2]
    last = seen.last_seen("default", "gone")
    assert last is not None and last.table
    seen.note("default", "gone", last.version, last.highest, "a table made before the restore")
    Sequence.objects.filter(name="gone").delete()  # as a restore's DROP and CREATE leave it, before its rows
    with pytest.raises(SequenceUnavailable):
        next_value("gone")
    assert not Sequence.objects.filter(name="gone").exists()
    clear_cache()  # deleted on purpose: the process is told so
    assert next_value("gone") == 1


@pytest.mark.django_db(transaction=True)
def test_an_alter_that_keeps_the_table_costs_nothing(backend):
    """MariaDB: an index added and dropped (in place, no rebuild) moves the table's creation time, which the app
    reads with every row, but not its InnoDB table id, which the app then asks for: nothing is skipped."""
    if backend != "mariadb":
        pytest.skip("PostgreSQL's oid never moves without DROP and CREATE; SQLite reads no identity")
    Sequence.objects.create(name="altered", step=10)
    assert next_value("altered") == 1
    table = Sequence._meta.db_table
    created = "SELECT CREATE_TIME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s"
    with connections["default"].cursor() as cursor:
        cursor.execute(created, [table])
        before = cursor.fetchone()[0]
        time.sleep(1.1)  # the creation time counts whole seconds
        cursor.execute(f"CREATE INDEX segseq_probe ON {table} (modified)")
        cursor.execute(f"DROP INDEX segseq_probe ON {table}")
        cursor.execute(created, [table])
        assert cursor.fetchone()[0] != before  # the app saw something change, and asked InnoDB
    clear_cache()
    assert next_value("altered") == 11


@pytest.mark.django_db(transaction=True)
def test_a_block_inside_the_callers_transaction_leaves_the_fence_armed(backend):
    """A block taken inside the transaction that holds the row never skips (it commits with the caller's rows);
    it keeps the restored row's history, so the next range taken on its own still skips."""
    if backend == "sqlite":
        pytest.skip("SQLite's table has no identity the app reads")
    Sequence.objects.create(name="held", step=10)
    assert next_value("held") == 1
    server, _, table = Sequence.objects.get(name="held").history.partition("/")
    restored = f"{server}/{int(table) + 1}"
    Sequence.objects.filter(name="held").update(history=restored)
    clear_cache()
    with transaction.atomic():
        Sequence.objects.select_for_update().get(name="held")
        assert next_value("held") == 11  # inside the caller's transaction: no skip
    assert Sequence.objects.get(name="held").history == restored
    clear_cache()
    # The block inside the transaction was exactly the one number taken there: the row stands at 11.
    assert next_value("held") == 11 + app_settings()["FAILOVER_SKIP"] + 1
