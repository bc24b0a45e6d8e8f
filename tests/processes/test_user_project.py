"""The user project, driven through its manage.py: migrations that number 10,000 existing rows, and segment_seq."""

import json
import re

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
