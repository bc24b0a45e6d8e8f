"""System checks of the SEGMENT_SEQ setting."""

import pytest
from django.test import override_settings

from django_segment_seq.checks import check_gapless_replication, check_settings, gapless_fields


def ids(settings_value):
    with override_settings(SEGMENT_SEQ=settings_value):
        return [e.id for e in check_settings()]


def test_valid_settings_pass():
    assert ids({"DEFAULT_STEP": 500, "DATABASE": "default", "CREATE_ON_FIRST_USE": False}) == []


@pytest.mark.parametrize(
    "value, expected",
    [
        (["not", "a", "dict"], ["django_segment_seq.E001"]),
        ({"DEFAULT_STEPS": 5}, ["django_segment_seq.E002"]),
        ({"DEFAULT_STEP": 0}, ["django_segment_seq.E003"]),
        ({"MAX_RETRIES": "many"}, ["django_segment_seq.E003"]),
        ({"CREATE_ON_FIRST_USE": 1}, ["django_segment_seq.E003"]),
        ({"MAX_BACKOFF": -1}, ["django_segment_seq.E003"]),
        ({"DATABASE": "elsewhere"}, ["django_segment_seq.E004"]),
    ],
)
def test_bad_settings_are_reported(value, expected):
    assert ids(value) == expected


class _EverythingElsewhere:
    def db_for_write(self, model, **hints):
        return "elsewhere"


def test_database_setting_without_a_router_that_agrees_is_reported():
    with override_settings(DATABASE_ROUTERS=[_EverythingElsewhere()]):
        assert ids({"DATABASE": "default"}) == ["django_segment_seq.E005"]
    routers = ["django_segment_seq.routers.SequenceRouter", _EverythingElsewhere()]
    with override_settings(DATABASE_ROUTERS=routers):
        assert ids({"DATABASE": "default"}) == []


@pytest.mark.parametrize(
    "servers, said",
    [
        ({"nowhere": ["db1:3306"]}, "SEGMENT_SEQ['SERVERS'] names 'nowhere', which is not an alias of DATABASES."),
        ({"default": "db1:3306"}, "SEGMENT_SEQ['SERVERS']['default'] is 'db1:3306', not a list"),
        ({"default": []}, "SEGMENT_SEQ['SERVERS']['default'] is an empty list"),
        ({"default": ["db1:3306", 4401]}, "SEGMENT_SEQ['SERVERS']['default'][1] is 4401, not a"),
        ({"default": ["db1:3306", "db2:33o6"]}, "['default'][1] is 'db2:33o6', whose port '33o6' is not a number."),
        ({"default": ["db1:3306", ":3306"]}, "['default'][1] is ':3306', which names no host."),
    ],
)
def test_a_wrong_servers_entry_is_named(servers, said):
    with override_settings(SEGMENT_SEQ={"SERVERS": servers}):
        messages = [message for message in check_settings() if message.id == "django_segment_seq.E050"]
    assert [said in message.msg for message in messages] == [True], [message.msg for message in messages]


@pytest.mark.parametrize("standbys", [{"nowhere": 1}, {"default": -1}, {"default": "1"}, {"default": True}])
def test_a_wrong_standbys_entry_is_refused(standbys, backend):
    with override_settings(SEGMENT_SEQ={"STANDBYS": standbys}):
        assert "django_segment_seq.E055" in [message.id for message in check_settings()]


def test_a_standbys_entry_is_accepted_for_a_postgresql_database_only(backend):
    with override_settings(SEGMENT_SEQ={"STANDBYS": {"default": 1}}):
        found = [message.id for message in check_settings()]
    assert ("django_segment_seq.E055" in found) == (backend != "postgres")


@pytest.mark.django_db
def test_gapless_numbers_on_a_server_without_standbys_are_not_warned_of(backend):
    # The test project's gapless fields are found; W005 itself fires on a primary with an asynchronous standby
    # (tests/clusters/test_pg_failover.py), never on a server that streams to none or on another vendor.
    assert "testapp.GaplessInvoice.number" in gapless_fields()
    assert check_gapless_replication(databases=["default"]) == []


@pytest.mark.django_db(transaction=True)
def test_database_checks_pass_before_migrate_made_the_apps_tables(settings):
    # `migrate` on a fresh database runs the database checks first: none may query a table still to come
    # (E063 did, with SEGMENT_SEQ["REDIS"] set: ProgrammingError, and migrate never ran).
    from django.core.checks import Tags, run_checks
    from django.db import connection

    from django_segment_seq.models import ConcealedFormat, Sequence

    settings.SEGMENT_SEQ = {
        "CONCEAL_KEY": "00112233445566778899aabbccddeeff",
        "REDIS": {"LOCATION": "redis://127.0.0.1:1/0", "SEQUENCES": ["wraps"]},
    }
    Sequence.objects.create(name="wraps", cycle=True, max_value=10)
    assert "django_segment_seq.E063" in [m.id for m in run_checks(tags=[Tags.database], databases=["default"])]
    tables = [Sequence._meta.db_table, ConcealedFormat._meta.db_table]
    with connection.schema_editor() as editor:
        for table in tables:
            editor.alter_db_table(None, table, f"{table}_away")
    try:
        found = run_checks(tags=[Tags.database], databases=["default"])
    finally:
        with connection.schema_editor() as editor:
            for table in tables:
                editor.alter_db_table(None, f"{table}_away", table)
    # None queries a table still to come; E066 says the table is missing (and is silent inside migrate itself).
    assert [message.id for message in found if message.id.startswith("django_segment_seq.")] == [
        "django_segment_seq.E066"
    ]
