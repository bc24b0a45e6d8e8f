"""The user project, driven through its manage.py: migrations that number 10,000 existing rows, and segment_seq."""

import json
import re
import shutil

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

EXISTING_CUSTOMERS = 10_000


def test_migrations_are_current(user_project):
    run = user_project.manage("makemigrations", "--check", "--dry-run")
    assert run.returncode == 0, run.output
    assert "No changes detected" in run.stdout


def test_fill_migration_numbers_existing_rows(user_project, capsys):
    user_project.manage("migrate", "shop", "0002", "--noinput").check()
    imported = user_project.manage("import_customers", str(EXISTING_CUSTOMERS)).check()
    assert f"inserted {EXISTING_CUSTOMERS} customers" in imported.stdout

    plan = user_project.manage("migrate", "shop", "0003", "--plan").check()  # the same start-up, nothing applied
    fill = user_project.manage("migrate", "shop", "0003", "--noinput").check()
    assert "Applying shop.0003_fill_customer_numbers... OK" in fill.stdout
    with capsys.disabled():  # a figure for the README, not a timed assertion
        print(
            f"\n[{user_project.backend}] migrate shop 0003, {EXISTING_CUSTOMERS} rows, two fields: "
            f"{fill.seconds:.2f} s ({plan.seconds:.2f} s of it start-up, as `migrate --plan` takes)"
        )
    user_project.manage("migrate", "--noinput").check()

    # Every existing row got its own number, in primary-key order, and the constraint of 0004 holds.
    listing = json.loads(user_project.manage("segment_seq", "list", "--json").check().stdout)
    rows = {row["name"]: row for row in listing["sequences"]}
    # A row's value is the highest number handed to any process: ranges (prefetch, adaptive step) go further.
    assert rows["customer"]["value"] >= EXISTING_CUSTOMERS
    (period,) = rows["customer-code"]["periods"]
    assert period["value"] >= EXISTING_CUSTOMERS and period["max_value"] == 999_999
    check = user_project.manage(
        "shell",
        "-v",
        "0",
        "-c",
        "from shop.models import Customer; "
        "rows = list(Customer.objects.order_by('pk').values_list('number', 'code')); "
        "print(len(rows), rows[0][0], rows[-1][0], rows[0][1], rows[-1][1], "
        "len({n for n, _ in rows}), len({c for _, c in rows})); "
        "print(Customer.objects.create(name='new').number)",
    ).check()
    first, second = check.stdout.splitlines()[:2]
    count, low, high, first_code, last_code, distinct_numbers, distinct_codes = first.split()
    assert (int(count), int(low), int(high)) == (EXISTING_CUSTOMERS, 1, EXISTING_CUSTOMERS)
    assert re.fullmatch(r"C\d{4}-000001", first_code) and re.fullmatch(r"C\d{4}-010000", last_code)
    assert int(distinct_numbers) == int(distinct_codes) == EXISTING_CUSTOMERS
    assert int(second) == rows["customer"]["value"] + 1  # a new process starts after every range taken

    # 0006 created the "invoice" row (min_value 100000) and numbered invoices in the same migration.
    invoices = user_project.manage(
        "shell",
        "-v",
        "0",
        "-c",
        "from shop.models import Customer, Invoice; "
        "print(*Invoice.objects.order_by('pk').values_list('number', flat=True)); "
        "print(Invoice.objects.create(customer=Customer.objects.first()).number)",
    ).check()
    opening, later = invoices.stdout.splitlines()[:2]
    assert opening.split() == ["100000", "100001", "100002"]
    assert int(later) > 100002

    # Reversing the fill changes nothing; reversing 0002 drops the columns.
    user_project.manage("migrate", "shop", "0001", "--noinput").check()


def test_a_project_without_the_service_app_gets_no_client_table_admin_or_permission(user_project):
    user_project.manage("migrate", "--noinput").check()
    code = (
        "from django.db import connection; from django.contrib.auth.models import Permission; "
        "print(sorted(connection.introspection.table_names())); "
        "print(Permission.objects.filter(codename='use_id_service').count())"
    )
    tables, permissions = user_project.manage("shell", "-v", "0", "-c", code).check().stdout.splitlines()
    assert "django_segment_seq_sequence" in tables and "django_segment_seq_client" not in tables
    assert permissions == "0"
    refused = user_project.manage("segment_seq", "client", "list")
    assert refused.returncode == 1 and '"django_segment_seq.service" to INSTALLED_APPS' in refused.stderr


def test_segment_seq_command_through_manage_py(user_project):
    user_project.manage("migrate", "django_segment_seq", "--noinput").check()
    user_project.manage("migrate", "shop", "0002", "--noinput").check()
    user_project.manage("import_customers", "25").check()

    backfill = user_project.manage("segment_seq", "backfill", "shop.Customer.number", "--batch-size", "10").check()
    assert "shop.Customer.number: filled 25 rows in 3 batches." in backfill.stdout
    assert "100%" in backfill.stdout and "25/25" in backfill.stdout
    again = user_project.manage("segment_seq", "backfill", "shop.Customer.number").check()
    assert "no empty values; nothing to fill" in again.stdout

    user_project.manage("migrate", "--noinput").check()  # 0003 fills only the codes; the numbers are there already
    user_project.manage(
        "shell", "-v", "0", "-c", "from shop.models import Customer; Customer.objects.filter(pk=1).update(number=5000)"
    ).check()
    sync = user_project.manage("segment_seq", "sync", "shop.Customer.number").check()
    assert re.search(r"Sequence 'customer' moved from \d+ to 5000", sync.stdout), sync.stdout

    shown = json.loads(user_project.manage("segment_seq", "show", "customer", "--json").check().stdout)
    assert (shown["name"], shown["value"], shown["left"]) == ("customer", 5000, None)
    listing = user_project.manage("segment_seq", "list").check()
    assert re.search(r"^customer\s+5000\s+1000\s+1\s+no limit\s+no\s+no limit$", listing.stdout, re.MULTILINE), (
        listing.stdout
    )

    refused = user_project.manage("segment_seq", "set", "customer", "--step", "0")
    assert refused.returncode == 1
    assert "Sequence 'customer' not changed: step: The step must be at least 1." in refused.stderr
    missing = user_project.manage("segment_seq", "show", "nosuch")
    assert missing.returncode == 1 and "No sequence named 'nosuch'" in missing.stderr
    created = user_project.manage(
        "shell", "-v", "0", "-c", "from shop.models import Customer; print(Customer.objects.create(name='x').number)"
    )
    assert created.check().stdout.strip() == "5001"


def test_manage_py_test_runs_on_a_database_of_its_own(user_project):
    run = user_project.manage("test", "shop", "--noinput", "-v", "2")
    assert run.returncode == 0, run.output
    assert "Ran 1 test" in run.stderr and "OK" in run.stderr
    assert "_test" in run.stderr  # Django's test database, made from the throw-away name and dropped after


BILLING_MODELS = """
from django.db import models

from django_segment_seq import SequenceField


class Company(models.Model):
    name = models.CharField(max_length=50)


class CompanyInvoice(models.Model):
    pk = models.CompositePrimaryKey("company", "number")
    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    number = SequenceField("company-invoice", scope=["company"])


class CompanyCredit(models.Model):
    pk = models.CompositePrimaryKey("company", "code")
    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    code = SequenceField("cinv", format="INV-{value:06d}", scope=["company"])
"""

BILLING_USE = (
    "from billing.models import Company, CompanyInvoice, CompanyCredit; "
    "a, b = Company.objects.create(name='a'), Company.objects.create(name='b'); "
    "print(*[CompanyInvoice.objects.create(company=c).number for c in (a, b, a)]); "
    "new = CompanyInvoice(company=b); new.save(); print(new.number); "
    "print(*[i.number for i in CompanyInvoice.objects.bulk_create([CompanyInvoice(company=a) for _ in range(2)])]); "
    "print(CompanyInvoice.objects.get(pk=(a.pk, 4)).pk == (a.pk, 4), "
    "CompanyInvoice.objects.filter(pk__in=[(a.pk, 1), (b.pk, 2), (b.pk, 9)]).count()); "
    "print(*[CompanyCredit.objects.create(company=c).code for c in (b, a, b)]); "
    "from django.db import IntegrityError\n"
    "try:\n    CompanyInvoice.objects.create(company=a, number=1)\n"
    "except IntegrityError:\n    print('key held')"
)


def test_a_number_inside_a_composite_primary_key_through_makemigrations_and_migrate(user_project, tmp_path):
    """A user's app with a SequenceField in a CompositePrimaryKey: its migration is written, applied and used."""
    project = tmp_path / "project"
    shutil.copytree(user_project.directory, project, ignore=shutil.ignore_patterns("__pycache__"))
    billing = project / "billing"
    (billing / "migrations").mkdir(parents=True)
    (billing / "__init__.py").write_text("")
    (billing / "migrations" / "__init__.py").write_text("")
    (billing / "models.py").write_text(BILLING_MODELS)
    settings = project / "userproject" / "settings.py"
    settings.write_text(settings.read_text() + '\nINSTALLED_APPS += ["billing"]\n')
    user_project.directory = project

    made = user_project.manage("makemigrations", "billing").check()
    assert "Create model CompanyInvoice" in made.stdout, made.stdout
    migration = (billing / "migrations" / "0001_initial.py").read_text()
    assert "models.CompositePrimaryKey('company', 'number'" in migration
    assert "django_segment_seq.fields.SequenceField(scope=['company'], sequence_name='company-invoice')" in migration
    credit = "SequenceField(format='INV-{value:06d}', max_length=32, scope=['company'], sequence_name='cinv')"
    assert credit in migration
    user_project.manage("migrate", "--noinput").check()
    current = user_project.manage("makemigrations", "--check", "--dry-run").check()
    assert "No changes detected" in current.stdout
    checked = user_project.manage("check").check()
    assert "no issues" in checked.stdout

    used = user_project.manage("shell", "-v", "0", "-c", BILLING_USE).check().stdout.splitlines()
    assert used == ["1 1 2", "2", "3 4", "True 2", "INV-000001 INV-000001 INV-000002", "key held"]
    listing = user_project.manage("segment_seq", "list").check().stdout
    assert "company=1" in listing and "company=2" in listing
    refused = user_project.manage("segment_seq", "backfill", "billing.CompanyInvoice.number")
    assert refused.returncode == 1 and "part of the primary key (company, number)" in refused.stderr
