"""A SequenceField inside a CompositePrimaryKey: a per-company number that is part of the key, on every backend."""

import io

import pytest
from django.core import checks
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, models, transaction
from django.test.utils import CaptureQueriesContext, isolate_apps

from django_segment_seq import SequenceField, SequenceScopeError, fill_sequences
from django_segment_seq.backfill import count_empty, fill_empty
from django_segment_seq.models import Sequence
from tests.testapp.models import Company, DailyOrder, KeyedCredit, KeyedInvoice, KeyedLine

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def acme():
    return Company.objects.create(code="ACME")


@pytest.fixture
def globex():
    return Company.objects.create(code="GLX")


def table_queries(model, queries) -> list[str]:
    """The statements of `queries` that read or write `model`'s table."""
    table = connection.ops.quote_name(model._meta.db_table)
    return [query["sql"] for query in queries if table in query["sql"]]


# create(), save(), get(), filter()


def test_create_numbers_each_company_from_its_own_start(acme, globex):
    Sequence.objects.create(name="keyed-invoice", min_value=100)
    got = [KeyedInvoice.objects.create(company=c).pk for c in (acme, globex, acme, globex, acme)]
    assert got == [(acme.pk, 100), (globex.pk, 100), (acme.pk, 101), (globex.pk, 101), (acme.pk, 102)]
    assert sorted(KeyedInvoice.objects.values_list("company_id", "number")) == sorted(got)


def test_formatted_number_in_the_key(acme, globex):
    got = [KeyedCredit.objects.create(company=c).pk for c in (acme, globex, acme)]
    assert got == [(acme.pk, "CR-000001"), (globex.pk, "CR-000001"), (acme.pk, "CR-000002")]


@pytest.mark.parametrize("model", [KeyedInvoice, KeyedCredit], ids=["integer", "formatted"])
def test_save_of_a_new_instance_numbers_it_before_django_looks_up_the_key(acme, model):
    model.objects.create(company=acme)
    obj = model(company=acme)
    field = obj._meta.pk_fields[1]
    with CaptureQueriesContext(connection) as queries:
        obj.save()
    number = getattr(obj, field.attname)
    assert number not in (None, "")
    statements = table_queries(model, queries.captured_queries)
    assert statements[-1].startswith("INSERT")
    # Django sees a whole key and may look it up first, but only ever with the number just taken.
    for sql in statements:
        assert str(number) in sql, sql
    assert model.objects.filter(company=acme).count() == 2


def test_save_of_a_new_instance_leaves_a_row_with_an_empty_text_alone(acme):
    old = KeyedCredit.objects.create(company=acme, note="old")
    KeyedCredit.objects.filter(pk=old.pk).update(code="")  # an imported row with an empty text in its key
    new = KeyedCredit(company=acme, note="new")
    new.save()
    assert new.code == "CR-000002"
    assert sorted(KeyedCredit.objects.values_list("code", "note")) == [("", "old"), ("CR-000002", "new")]


def test_only_a_formatted_number_inside_a_key_starts_as_none():
    assert KeyedCredit().code is None
    assert KeyedCredit().note == ""
    assert DailyOrder().order_no == ""  # outside a key, a formatted field keeps a CharField's default
    assert SequenceField("unbound", format="{value}").get_default() == ""
    assert KeyedCredit(code="CR-000009").code == "CR-000009"


def test_save_with_force_insert_inserts_at_once(acme):
    credit = KeyedCredit(company=acme, note="x")
    with CaptureQueriesContext(connection) as queries:
        credit.save(force_insert=True)
    assert [sql.split()[0] for sql in table_queries(KeyedCredit, queries.captured_queries)] == ["INSERT"]
    assert credit.pk == (acme.pk, "CR-000001")


def test_save_after_an_import_the_sequence_was_not_moved_past_finds_the_imported_row(acme):
    """What docs/scopes.md warns of: Django updates the row whose key save() is given, as for any whole key."""
    KeyedCredit.objects.create(company=acme, code="CR-000001", note="imported")
    new = KeyedCredit(company=acme, note="new")
    new.save()
    assert new.pk == (acme.pk, "CR-000001")
    assert list(KeyedCredit.objects.values_list("code", "note")) == [("CR-000001", "new")]


def test_saving_an_existing_instance_updates_it_and_keeps_its_number(acme):
    credit = KeyedCredit.objects.create(company=acme, note="draft")
    key = credit.pk
    credit.note = "sent"
    with CaptureQueriesContext(connection) as queries:
        credit.save()
    assert credit.pk == key
    assert [sql.split()[0] for sql in table_queries(KeyedCredit, queries.captured_queries)] == ["UPDATE"]
    assert KeyedCredit.objects.get(pk=key).note == "sent"
    invoice = KeyedInvoice.objects.create(company=acme)
    invoice.save()
    assert KeyedInvoice.objects.get().pk == invoice.pk == (acme.pk, 1)
    assert Sequence.objects.get(name=f"keyed-invoice@company={acme.pk}").value >= 1


def test_get_and_filter_by_the_key(acme, globex):
    invoices = [KeyedInvoice.objects.create(company=c) for c in (acme, globex, acme)]
    assert KeyedInvoice.objects.get(pk=(acme.pk, 2)) == invoices[2]
    assert KeyedInvoice.objects.get(pk=(globex.pk, 1)) == invoices[1]
    found = KeyedInvoice.objects.filter(pk__in=[(acme.pk, 1), (globex.pk, 1), (globex.pk, 2)])
    assert sorted(obj.pk for obj in found) == [(acme.pk, 1), (globex.pk, 1)]
    credit = KeyedCredit.objects.create(company=globex)
    assert KeyedCredit.objects.get(pk=(globex.pk, "CR-000001")) == credit
    assert list(KeyedCredit.objects.filter(pk__in=[(globex.pk, "CR-000001")])) == [credit]


def test_a_number_the_table_already_has_is_refused_by_the_key(acme):
    KeyedInvoice.objects.create(company=acme, number=1)  # imported, the sequence not moved past it
    with pytest.raises(IntegrityError), transaction.atomic():
        KeyedInvoice.objects.create(company=acme)
    assert KeyedInvoice.objects.count() == 1


# bulk_create


def test_bulk_create_through_the_sequence_manager_takes_one_allocation_per_company(acme, globex):
    assert type(KeyedInvoice.objects).__name__ == "SequenceManager"
    KeyedInvoice.objects.create(company=globex)
    objs = KeyedInvoice.objects.bulk_create([KeyedInvoice(company=c) for c in (acme, globex) * 3])
    assert [obj.pk for obj in objs] == [
        (acme.pk, 1),
        (globex.pk, 2),
        (acme.pk, 2),
        (globex.pk, 3),
        (acme.pk, 3),
        (globex.pk, 4),
    ]
    assert KeyedInvoice.objects.count() == 7
    assert set(Sequence.objects.filter(base_name="keyed-invoice").values_list("name", flat=True)) == {
        f"keyed-invoice@company={acme.pk}",
        f"keyed-invoice@company={globex.pk}",
    }


def test_bulk_create_through_a_plain_queryset_numbers_one_by_one(acme, globex):
    objs = models.QuerySet(KeyedInvoice).bulk_create([KeyedInvoice(company=c) for c in (acme, acme, globex)])
    assert [obj.pk for obj in objs] == [(acme.pk, 1), (acme.pk, 2), (globex.pk, 1)]
    credits = KeyedCredit.objects.bulk_create([KeyedCredit(company=c) for c in (globex, acme, globex)])
    assert [obj.pk for obj in credits] == [(globex.pk, "CR-000001"), (acme.pk, "CR-000001"), (globex.pk, "CR-000002")]
    assert KeyedCredit.objects.count() == 3


def test_fill_sequences_numbers_the_key_before_bulk_create(acme):
    objs = [KeyedInvoice(company=acme) for _ in range(3)]
    assert fill_sequences(objs) == 3
    assert [obj.pk for obj in objs] == [(acme.pk, 1), (acme.pk, 2), (acme.pk, 3)]
    models.QuerySet(KeyedInvoice).bulk_create(objs)
    assert KeyedInvoice.objects.count() == 3


# checks


def test_the_models_pass_every_check():
    messages = [
        message
        for model in (KeyedInvoice, KeyedCredit, KeyedLine)
        for message in model.check()
        if message.level >= checks.WARNING
    ]
    assert messages == []
    call_command("check", "testapp", stdout=io.StringIO())


def keyed_model_messages(scope, key=("company", "number"), **field_options) -> list[checks.CheckMessage]:
    @isolate_apps("tests.testapp")
    def build():
        class Model(models.Model):
            pk = models.CompositePrimaryKey(*key)
            company = models.ForeignKey("testapp.Company", on_delete=models.CASCADE)
            kind = models.CharField(max_length=6)
            number = SequenceField("keyed-check", scope=scope, **field_options)

            class Meta:
                app_label = "testapp"

        return Model._meta.get_field("number").check()

    return [message for message in build() if message.id.startswith("django_segment_seq")]


def test_a_number_scoped_by_the_rest_of_the_key_passes():
    assert keyed_model_messages(["company"]) == []
    assert keyed_model_messages(["company_id"]) == []
    assert keyed_model_messages(None) == []  # one counter for the table: unique on its own
    assert keyed_model_messages(["company", "kind"], key=("company", "kind", "number")) == []


def test_a_scope_field_outside_the_key_would_repeat_keys():
    messages = keyed_model_messages(["company", "kind"])
    assert [message.id for message in messages] == ["django_segment_seq.E040"]
    assert "scoped by kind, which is not" in messages[0].msg
    assert "Put kind in the CompositePrimaryKey" in messages[0].hint


def test_a_scope_outside_the_key_shown_in_the_text_keeps_keys_apart():
    assert keyed_model_messages(["company", "kind"], format="{instance.kind}-{value:04d}") == []
    shown = keyed_model_messages(["company", "kind"], format="{value:04d}")
    assert [message.id for message in shown] == ["django_segment_seq.E040"]


def test_a_key_naming_a_missing_field_does_not_break_the_check():
    # Django's models.E042 reports the missing field; this check still sees "kind" outside the key.
    messages = keyed_model_messages(["kind"], key=("nothing", "number"))
    assert [message.id for message in messages] == ["django_segment_seq.E040"]


# the segment_seq command


def segment_seq(*args: str) -> str:
    out = io.StringIO()
    call_command("segment_seq", *args, stdout=out)
    return out.getvalue()


def test_list_and_show_the_rows_of_each_company(acme, globex):
    for company in (acme, globex, acme):
        KeyedInvoice.objects.create(company=company)
    listed = segment_seq("list")
    assert f"company={acme.pk}" in listed and f"company={globex.pk}" in listed
    shown = segment_seq("show", f"keyed-invoice@company={acme.pk}")
    assert f"keyed-invoice@company={acme.pk}" in shown


def test_sync_moves_an_unscoped_number_in_the_key(acme):
    KeyedLine.objects.create(company=acme, line=41)
    assert "Sequence 'keyed-line' moved from 0 to 41" in segment_seq("sync", "testapp.KeyedLine.line")
    assert KeyedLine.objects.create(company=acme).pk == (acme.pk, 42)


def test_sync_moves_a_scoped_number_in_the_key_as_any_scoped_field(acme):
    KeyedInvoice.objects.create(company=acme, number=7)
    assert f"keyed-invoice@company={acme.pk}" in segment_seq("sync", "testapp.KeyedInvoice.number")
    assert KeyedInvoice.objects.create(company=acme).pk == (acme.pk, 8)


@pytest.mark.parametrize("label", ["testapp.KeyedInvoice.number", "testapp.KeyedCredit.code", "testapp.KeyedLine.line"])
def test_backfill_refuses_a_number_in_the_key(acme, label):
    KeyedCredit.objects.create(company=acme)
    KeyedCredit.objects.update(code="")  # an empty text a backfill might take for a number still to give
    with pytest.raises(CommandError, match=r"is part of the primary key \(company, \w+\), which is never empty"):
        segment_seq("backfill", label)
    assert KeyedCredit.objects.get().code == ""


@pytest.mark.parametrize("model", [KeyedInvoice, KeyedCredit], ids=["integer", "formatted"])
def test_fill_empty_and_count_empty_refuse_a_number_in_the_key(model):
    name = model._meta.pk_fields[1].name
    with pytest.raises(ValueError, match="part of the primary key"):
        count_empty(model, name)
    with pytest.raises(ValueError, match="part of the primary key"):
        fill_empty(model, name)


def test_a_scope_field_django_fills_at_save_is_empty_when_the_key_is_numbered():
    """Django numbers a key (get_pk_value_on_save) before any field's pre_save: an auto_now_add date is still None."""

    @isolate_apps("tests.testapp")
    def build():
        class DailyKeyed(models.Model):
            pk = models.CompositePrimaryKey("day", "number")
            day = models.DateField(auto_now_add=True)
            number = SequenceField("keyed-daily", scope=["day"])

            class Meta:
                app_label = "testapp"

        with pytest.raises(SequenceScopeError, match="scope field 'day' is empty"):
            DailyKeyed._meta.pk.get_pk_value_on_save(DailyKeyed())
        return DailyKeyed._meta.get_field("number").check()

    messages = [message for message in build() if message.id.startswith("django_segment_seq")]
    assert [message.id for message in messages] == ["django_segment_seq.E041"]
    assert "scoped by day, which is only filled at save, after Django numbers the key" in messages[0].msg


@pytest.mark.parametrize(
    "extra",
    [
        {"day": models.DateField(auto_now=True)},
        {"day": models.DateTimeField(auto_now_add=True)},
        {"day": SequenceField("keyed-day")},
    ],
    ids=["auto_now", "datetime-auto_now_add", "sequence-field"],
)
def test_every_field_filled_at_save_is_refused_as_a_key_scope(extra):
    @isolate_apps("tests.testapp")
    def build():
        attrs = {
            "__module__": __name__,
            "Meta": type("Meta", (), {"app_label": "testapp"}),
            "pk": models.CompositePrimaryKey("day", "number"),
            **extra,
            "number": SequenceField("keyed-daily", scope=["day"]),
        }
        return type("DailyKeyed", (models.Model,), attrs)._meta.get_field("number").check()

    assert [message.id for message in build() if message.id.startswith("django_segment_seq")] == [
        "django_segment_seq.E041"
    ]
