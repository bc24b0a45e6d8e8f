"""Numbers made in code (next_text): the texts a SequenceField makes, by a NumberRule or by a field's label, with its
format, periods, scopes, check digits and concealment, on the same rows as the field."""

from datetime import date

import pytest
from django.db import transaction

from django_segment_seq import (
    NumberRule,
    SequenceMisconfigured,
    SequenceScopeError,
    next_text,
    next_texts,
)
from django_segment_seq.db.concealed_formats import ConcealedFormat
from django_segment_seq.fields.labels import UnknownFieldLabel
from django_segment_seq.flow.checkdigits import has_valid_check_digits
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.workers import SCOPE_FACTOR
from tests.testapp.models import (
    SITE_ORDER,
    CheckedInvoice,
    Company,
    CompanyInvoice,
    CompanyOrder,
    DailyOrder,
    IssuedInvoice,
    KindTicket,
    ShopOrder,
    SiteOrder,
)

pytestmark = pytest.mark.django_db(transaction=True)

DAILY = NumberRule("daily-order", format="OD{date:%Y%m%d}{value:06d}", reset="daily")


def test_a_rule_like_the_fields_continues_the_fields_series(clock):
    made = [next_text(DAILY), DailyOrder.objects.create().order_no, next_text("testapp.DailyOrder.order_no")]
    assert made == ["OD20261122000001", "OD20261122000002", "OD20261122000003"]


def test_each_period_counts_on_its_own(clock):
    assert next_text(DAILY) == "OD20261122000001"
    clock.advance(days=1)
    assert next_text(DAILY) == "OD20261123000001"
    assert DailyOrder.objects.create().order_no == "OD20261123000002"
    assert next_text(DAILY, at=date(2026, 11, 20)) == "OD20261120000001"  # an order dated before today


def test_the_field_is_unchanged_and_takes_its_rule():
    field = DailyOrder._meta.get_field("order_no")
    assert field.rule == DAILY
    assert field.flow is field.rule.flow and field.reset_rule is field.rule.reset_rule


def test_a_field_made_from_a_rule_shares_it_with_code(clock):
    field = SiteOrder._meta.get_field("number")
    assert field.rule == SITE_ORDER and field.db_index
    assert next_text(SITE_ORDER, scope={"site": 3}) == "2026-000001"
    assert SiteOrder.objects.create(site=3).number == "2026-000002"
    assert next_text("testapp.SiteOrder.number", scope={"site": 3}) == "2026-000003"
    assert SiteOrder.objects.create(site=4).number == "2026-000001"
    _name, path, _args, kwargs = field.deconstruct()
    assert path == "django_segment_seq.fields.SequenceField"
    assert {key: kwargs[key] for key in ("sequence_name", "format", "reset", "scope", "db_index")} == {
        "sequence_name": "site-order",
        "format": "{date:%Y}-{value:06d}",
        "reset": "yearly",
        "scope": "site",
        "db_index": True,
    }


def test_a_scope_counts_per_value_on_the_fields_rows():
    acme, globex = Company.objects.create(code="ACME"), Company.objects.create(code="GLOBEX")
    label = "testapp.CompanyOrder.number"
    assert next_text(label, scope={"company": acme}) == "1"
    assert CompanyOrder.objects.create(company=acme).number == 2
    assert next_text(label, scope={"company": globex.pk}) == "1"
    rule = NumberRule("company-order", scope=["company"])
    assert next_text(rule, scope={"company": acme.pk}) == "3"
    assert CompanyOrder.objects.create(company=globex).number == 2
    names = Sequence.objects.filter(base_name="company-order").values_list("name", flat=True)
    assert sorted(names) == sorted([f"company-order@company={acme.pk}", f"company-order@company={globex.pk}"])


def test_a_scope_and_a_period_in_one_text(clock):
    rule = NumberRule("site-order", format="{date:%Y}-{value:06d}", reset="yearly", scope="site")
    assert next_texts(rule, 2, scope={"site": "berlin"}) == ["2026-000001", "2026-000002"]
    assert next_text(rule, scope={"site": "Paris"}) == "2026-000001"
    clock.advance(days=40)
    assert next_text(rule, scope={"site": "berlin"}) == "2027-000001"
    assert Sequence.objects.filter(name="site-order@site=berlin/2027").exists()


def test_an_unsaved_instance_stands_for_the_row(clock):
    acme = Company.objects.create(code="ACME")
    label = "testapp.CompanyInvoice.number"
    assert next_text(label, instance=CompanyInvoice(company=acme)) == "INV-ACME-2026-00001"
    assert CompanyInvoice.objects.create(company=acme).number == "INV-ACME-2026-00002"
    assert next_text("testapp.KindTicket.code", instance=KindTicket(kind="RQ")) == "RQ202611220001"
    dated = IssuedInvoice(issued_on=date(2026, 3, 4))  # reset_on: the period of the instance's own date
    assert next_text("testapp.IssuedInvoice.number", instance=dated) == "INV-202603-00001"


def test_check_digits_verify(clock):
    texts = [*next_texts("testapp.CheckedInvoice.number", 3), CheckedInvoice.objects.create().number]
    assert texts[0] == "INV-2026-000001" + texts[0][-1]
    assert all(has_valid_check_digits(text, "luhn") for text in texts)
    assert_unique(texts, 4)
    rule = NumberRule("code-ref", format="R{value:06d}", check_digits="damm")
    assert all(has_valid_check_digits(text, "damm") for text in next_texts(rule, 5))


def test_concealed_texts_reveal_to_the_fields_numbers():
    field = ShopOrder._meta.get_field("number")
    first = next_text("testapp.ShopOrder.number")
    second = ShopOrder.objects.create().number
    assert (field.reveal(first), field.reveal(second)) == (1, 2)
    assert first != "SO00000001" + first[-1]  # concealed, not the plain number


def test_a_concealed_rule_made_in_code_records_its_key():
    rule = NumberRule("code-hidden", format="H{value:07d}", conceal=True)
    texts = next_texts(rule, 3)
    assert_unique(texts, 3)
    assert ConcealedFormat.objects.filter(sequence_name="code-hidden", format="H{value:07d}").count() == 1


def test_a_gapless_rule_gives_back_the_number_of_a_rolled_back_transaction():
    rule = NumberRule("code-gapless", format="G{value:04d}", gapless=True)

    class Abandoned(Exception):
        pass

    with pytest.raises(Abandoned), transaction.atomic():
        assert next_text(rule) == "G0001"
        raise Abandoned
    assert next_texts(rule, 2) == ["G0001", "G0002"]


def test_a_rule_without_a_format_gives_its_number():
    assert next_texts(NumberRule("code-plain"), 2) == ["1", "2"]


# Made when the test runs, not at import: a rule made at a module's top level is validated by manage.py check.
@pytest.mark.parametrize(
    "rule, message",
    [
        (lambda: NumberRule("bad", format="{valeu:06d}"), "placeholder {valeu} is unknown"),
        (lambda: NumberRule("bad", format="B{value}", reset="hourly"), "reset='hourly' is unknown"),
        (lambda: NumberRule("bad", format="B{value:06d}", reset="daily"), "every day repeats the same texts"),
        (lambda: NumberRule("bad", reset="daily"), "needs a format"),
        (lambda: NumberRule("bad", format="B{value:06d}", check_digits="nope"), "nope"),
        (lambda: NumberRule("bad", scope=5), "scope=5 must be a name"),
        (lambda: NumberRule("", format="{value}"), "sequence_name"),
    ],
)
def test_a_bad_rule_is_refused_by_name_and_takes_no_number(rule, message):
    with pytest.raises(SequenceMisconfigured, match=message.replace("{", r"\{").replace("}", r"\}")):
        next_text(rule())
    assert not Sequence.objects.exists()


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: next_text(NumberRule("s", scope="site")), SequenceScopeError, r"\(none\) are not the rule's scope"),
        (lambda: next_text(NumberRule("s"), scope={"site": 1}), SequenceScopeError, "not the rule's scope"),
        (lambda: next_text(NumberRule("s", scope="site"), scope={"site": None}), SequenceScopeError, "empty"),
        (lambda: next_text(NumberRule("s", scope="site"), scope={"site": 1.5}), SequenceScopeError, "float"),
        (lambda: next_text("testapp.CompanyOrder.number", scope={"kind": 1}), SequenceScopeError, "rule's scope"),
        (lambda: next_text("testapp.CompanyOrder.note"), UnknownFieldLabel, "no field 'note'"),
        (lambda: next_text("testapp.Company.code"), UnknownFieldLabel, "not a SequenceField"),
        (lambda: next_text("order"), UnknownFieldLabel, "APP_LABEL.Model.field"),
        (lambda: next_text(42), TypeError, "NumberRule or a field label"),
        (lambda: next_text("testapp.KindTicket.code"), ValueError, r"pass instance="),
        (lambda: next_texts(DAILY, 0), ValueError, "positive int"),
    ],
)
def test_bad_calls_are_named_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
    assert not Sequence.objects.exists()


def test_processes_make_texts_in_code_without_repeats(run_workers):
    Sequence.objects.create(name="code-order", step=7)  # small ranges: many allocations per site
    sites = "1,2"
    results = run_workers([("code-text", sites, 150)] * 3, timeout=240)
    numbers = assert_unique([n for got in results for n in got], 450)
    for site in (1, 2):
        assert min(n % SCOPE_FACTOR for n in numbers if n // SCOPE_FACTOR == site) == 1
