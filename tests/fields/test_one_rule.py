"""One rule, one home: a SequenceField is its NumberRule, so numbers made in code and by the field's save name the same
row and never repeat; a rule's shape is recorded and kept; rules made in code are known to the checks."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import date

import pytest
from django.core import checks
from django.core.management import call_command
from django.db import connection, models
from django.test.utils import isolate_apps

from django_segment_seq import NumberRule, SequenceField, next_text, next_value
from django_segment_seq.checks.rules import check_rules_made_in_code, shape_clashes
from django_segment_seq.exceptions import SequenceShapeChanged, SequenceTableMissing
from django_segment_seq.models import Sequence
from tests.conftest import ROOT, assert_unique, worker_env
from tests.testapp.models import (
    COMPANY_BILL,
    SITE_ORDER,
    TENANT_TICKET,
    Company,
    CompanyBill,
    CompanyInvoice,
    LabelledItem,
    SiteOrder,
    Slot,
    TenantTicket,
)

pytestmark = pytest.mark.django_db(transaction=True)

TENANT = uuid.UUID("6f1c2a4e-0b7d-4e59-9a51-3c2d1e0f9a8b")


def rows() -> set[str]:
    return set(Sequence.objects.values_list("name", flat=True))


def test_a_rule_scoped_by_a_foreign_keys_attname_counts_with_its_field():
    company = Company.objects.create(code="ACME")
    made = []
    for _ in range(3):
        made.append(next_text(COMPANY_BILL, scope={"company_id": company.pk}))
        made.append(CompanyBill.objects.create(company=company).number)
        made.append(next_text(COMPANY_BILL, scope={"company": company}))
        made.append(next_text("testapp.CompanyBill.number", scope={"company_id": company.pk}))
    assert_unique(made, 12)
    assert made[:4] == ["BILL-00001", "BILL-00002", "BILL-00003", "BILL-00004"]
    assert {name for name in rows() if name.startswith("company-bill@")} == {f"company-bill@company={company.pk}"}


def test_a_label_takes_a_scope_by_its_fields_name_or_attname():
    company = Company.objects.create(code="ACME")
    assert next_text("testapp.CompanyBill.number", scope={"company": company.pk}) == "BILL-00001"
    assert next_text("testapp.CompanyBill.number", scope={"company_id": company.pk}) == "BILL-00002"
    assert next_text("testapp.CompanyBill.number", scope={"company": company}) == "BILL-00003"


def test_scope_values_are_read_through_the_fields_types_in_code_too():
    made = [TenantTicket.objects.create(tenant=TENANT, urgent=True).number for _ in range(5)]
    for spelled in (str(TENANT).upper(), TENANT, str(TENANT)):
        for urgent in (1, "True", True, "1", "t"):
            made.append(next_text(TENANT_TICKET, scope={"tenant": spelled, "urgent": urgent}))
    assert_unique(made, 20)
    assert {name for name in rows() if name.startswith("tenant-ticket@")} == {
        f"tenant-ticket@tenant={TENANT},urgent=true"
    }


@pytest.mark.parametrize(
    ("label", "made", "values"),
    [
        ("testapp.SiteOrder.number", lambda: SiteOrder(site=3), [{"site": 3}, {"site": "3"}]),
        (
            "testapp.CompanyBill.number",
            lambda: CompanyBill(company=Company.objects.get_or_create(pk=7, code="C7")[0]),
            [{"company": 7}, {"company_id": "7"}, {"company": Company(pk=7)}],
        ),
        (
            "testapp.CompanyInvoice.number",
            lambda: CompanyInvoice(company=Company.objects.get_or_create(pk=7, code="C7")[0]),
            [{"company": 7}, {"company_id": 7}],
        ),
        (
            "testapp.TenantTicket.number",
            lambda: TenantTicket(tenant=TENANT, urgent=False),
            [{"tenant": str(TENANT).upper(), "urgent": 0}, {"tenant": TENANT, "urgent": "False"}],
        ),
        (
            "testapp.Slot.number",
            lambda: Slot(day=date(2026, 11, 22), urgent=True, token=TENANT),
            [
                {"day": "2026-11-22", "urgent": "1", "token": str(TENANT)},
                {"day": date(2026, 11, 22), "urgent": True, "token": TENANT},
            ],
        ),
        ("testapp.LabelledItem.number", lambda: LabelledItem(owner="Zoë"), [{"owner": "Zoë"}]),
    ],
)
def test_code_and_field_name_the_same_row_for_every_rule_shape(label, made, values, clock):
    from django_segment_seq.fields.labels import field_of

    _model, field = field_of(label)
    instance = made()
    expected = field.rule.scope_key_of(instance)
    assert expected is not None
    for given in values:
        assert field.rule.scope_key(given) == expected
    texts = [next_text(label, scope=given, instance=made()) for given in values]
    instance.save()
    texts.append(str(getattr(instance, field.attname)))
    texts.append(next_text(label, instance=made()))
    assert_unique(texts, len(values) + 2)


def test_processes_mixing_code_and_field_on_one_rule_repeat_nothing(run_workers):
    Company.objects.create(pk=1, code="ONE")
    results = run_workers([("shared-rule", "code", 60), ("shared-rule", "field", 60), ("shared-rule", "both", 60)])
    assert_unique([number for result in results for number in result], 180)


def test_next_value_gives_the_integer_of_a_rule_in_its_scope_and_period(clock):
    assert next_value(SITE_ORDER, scope={"site": 5}) == 1
    assert next_text(SITE_ORDER, scope={"site": "5"}) == "2026-000002"
    assert next_value(SITE_ORDER, scope={"site": 5}, at=date(2025, 3, 1)) == 1
    assert next_value(SITE_ORDER, scope={"site": 5}) == 3
    with pytest.raises(TypeError, match="need a NumberRule"):
        next_value("site-order", scope={"site": 5})


def test_a_reset_added_under_a_used_name_is_refused_before_any_text(clock):
    first = NumberRule("yr2", format="{date:%Y}-{value:04d}")
    made = [next_text(first) for _ in range(5)]
    assert made[-1] == "2026-0005"
    with pytest.raises(SequenceShapeChanged, match=r"reset=None.*reset='yearly'.*segment_seq reshape yr2"):
        next_text(NumberRule("yr2", format="{date:%Y}-{value:04d}", reset="yearly"))
    with pytest.raises(SequenceShapeChanged, match="scope"):
        next_text(NumberRule("yr2", format="{date:%Y}-{value:04d}", scope="site"), scope={"site": 1})
    assert not any(name.startswith("yr2@") for name in rows())
    # A new format alone keeps counting in the same row: nothing it makes was made before.
    assert next_text(NumberRule("yr2", format="{date:%Y}/{value:05d}")) == "2026/00006"


def test_a_shape_change_is_refused_in_a_new_process_and_said_by_check_database(clock):
    first = NumberRule("yr3", format="{date:%Y}-{value:04d}")
    next_text(first)
    code = (
        "import django; django.setup()\n"
        "from django_segment_seq import NumberRule, next_text\n"
        "from django_segment_seq.exceptions import SequenceShapeChanged\n"
        "try:\n"
        "    print(next_text(NumberRule('yr3', format='{date:%Y}-{value:04d}', reset='yearly')))\n"
        "except SequenceShapeChanged as exc:\n"
        "    print('refused', type(exc).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=worker_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused SequenceShapeChanged"


def test_a_fields_changed_reset_is_a_database_check_error():
    from django_segment_seq.models import RecordedShape

    RecordedShape.objects.create(sequence_name="daily-order", format="", reset="", scope="")  # a plain field's use
    found = [e for e in checks.run_checks(databases=[connection.alias]) if e.id == "django_segment_seq.E067"]
    field = CompanyInvoice._meta.apps.get_model("testapp", "DailyOrder")._meta.get_field("order_no")
    by_field = [e for e in found if e.obj is not None]  # a rule made in code under that name is said too
    assert [e.obj for e in by_field] == [field]
    assert "testapp.DailyOrder.order_no" in by_field[0].msg


@isolate_apps("tests.testapp")
def test_one_name_with_two_shapes_is_a_check_error_naming_both():
    class PlainOrder(models.Model):
        order_no = SequenceField("two-shapes")

        class Meta:
            app_label = "testapp"

    class DailyTwo(models.Model):
        order_no = SequenceField("two-shapes", format="OD{date:%Y%m%d}{value:06d}", reset="daily")

        class Meta:
            app_label = "testapp"

    plain, daily = PlainOrder._meta.get_field("order_no"), DailyTwo._meta.get_field("order_no")
    rule = NumberRule("two-shapes", format="X{value}")
    errors = shape_clashes(
        [
            ("testapp.PlainOrder.order_no", plain.rule, plain),
            ("testapp.DailyTwo.order_no", daily.rule, daily),
            ("NumberRule in shop.numbers", rule, None),
        ]
    )
    assert [error.id for error in errors] == ["django_segment_seq.E065", "django_segment_seq.E065"]
    assert "testapp.PlainOrder.order_no" in errors[0].msg and "testapp.DailyTwo.order_no" in errors[0].msg
    assert "shop.numbers" in errors[1].msg
    assert shape_clashes([("a", plain.rule, plain), ("b", NumberRule("two-shapes"), None)]) == []


def test_a_rule_made_at_import_time_is_checked_by_manage_check():
    module = {"__name__": "ledger.numbering", "NumberRule": NumberRule, "uuid": uuid}
    source = (
        "JOURNAL = NumberRule('ledger-journal-entry', format='JE-{value:010d}', "
        "scope={'entity_identifier': uuid.UUID, 'ledger_unit_identifier': uuid.UUID})\n"
    )
    exec(compile(source, "ledger/numbering.py", "exec"), module)
    errors = [error for error in check_rules_made_in_code() if "ledger-journal-entry" in error.msg]
    assert [error.id for error in errors] == ["django_segment_seq.E064"]
    assert "ledger.numbering" in errors[0].msg and "up to 135 characters" in errors[0].msg
    del module["JOURNAL"]
    assert not [error for error in check_rules_made_in_code() if "ledger-journal-entry" in error.msg]


def test_a_rule_with_declared_scope_types_reads_values_as_those_types():
    rule = NumberRule("typed-scope", scope={"tenant": uuid.UUID, "urgent": bool})
    assert rule.scope_key({"tenant": str(TENANT).upper(), "urgent": "1"}) == f"tenant={TENANT},urgent=true"
    assert [next_value(rule, scope={"tenant": TENANT, "urgent": flag}) for flag in (True, 1, "True")] == [1, 2, 3]


def test_a_database_never_migrated_is_a_configuration_error_naming_migrate(tmp_path):
    """A fresh, empty database: the first number raises SequenceTableMissing at once, and check --database says it."""
    empty = fresh_database(tmp_path)
    code = (
        "import django; django.setup()\n"
        "from django.core import checks\n"
        "from django_segment_seq import next_value\n"
        "from django_segment_seq.exceptions import SequenceTableMissing\n"
        "print([e.id for e in checks.run_checks(databases=['default']) if e.id == 'django_segment_seq.E066'])\n"
        "try:\n"
        "    next_value('never-migrated')\n"
        "except SequenceTableMissing as exc:\n"
        "    print('migrate' in str(exc), exc.alias)\n"
    )
    printed = run_on_fresh_database(empty, code)
    assert printed.split("\n")[:2] == ["['django_segment_seq.E066']", "True default"]
    assert SequenceTableMissing.__mro__[1].__name__ == "SequenceMisconfigured"


def fresh_database(tmp_path) -> str:
    """The name of a new, empty database on the backend under test."""
    if connection.vendor == "sqlite":
        return str(tmp_path / "empty.sqlite3")
    name = f"segment_seq_empty_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    return name


def run_on_fresh_database(name: str, code: str) -> str:
    """What `code` prints in a process of its own on the database `name`, which is dropped after; fails on an error."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=worker_env(SEGMENT_SEQ_TEST_DB_NAME=name),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        if connection.vendor != "sqlite":
            with connection.cursor() as cursor:
                cursor.execute(f"DROP DATABASE {name}")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_reshape_forgets_a_recorded_shape_so_a_seeded_new_rule_may_use_the_name(clock):
    from io import StringIO

    from django.core.management.base import CommandError

    next_text(NumberRule("yr4", format="{date:%Y}-{value:04d}"))
    yearly = NumberRule("yr4", format="{date:%Y}-{value:04d}", reset="yearly")
    with pytest.raises(SequenceShapeChanged):
        next_text(yearly)
    Sequence.objects.create(name="yr4@2026", base_name="yr4", period="2026", value=1)
    out = StringIO()
    call_command("segment_seq", "reshape", "yr4", stdout=out)
    assert "forgot its recorded shape" in out.getvalue()
    assert next_text(yearly) == "2026-0002"
    with pytest.raises(CommandError, match="No shape is recorded"):
        call_command("segment_seq", "reshape", "never-used")


def test_migrate_on_a_database_never_migrated_is_not_stopped_by_the_check(tmp_path):
    """migrate runs the database checks before it makes the tables: E066 must not stop the very command it names."""
    empty = fresh_database(tmp_path)
    code = (
        "import django; django.setup()\n"
        "from django.core.management import call_command\n"
        "from django.core import checks\n"
        "call_command('migrate', verbosity=0, skip_checks=False)\n"
        "from django.core.management import execute_from_command_line\n"
        "execute_from_command_line(['manage.py', 'migrate', '--verbosity', '0'])  # as manage.py runs it\n"
        "print([e.id for e in checks.run_checks(databases=['default']) if e.id == 'django_segment_seq.E066'])\n"
    )
    assert run_on_fresh_database(empty, code).strip() == "[]"
