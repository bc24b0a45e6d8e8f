"""void(): a number or text recorded as not used, with its reason, scope and period; every refusal records nothing."""

import pytest

from django_segment_seq import SequenceScopeError, next_value, next_values, void
from django_segment_seq.audit.exceptions import (
    AlreadyVoided,
    EmptyReason,
    InvalidVoidOption,
    NeverHandedOut,
    OtherSeries,
    UnknownField,
    UnreadableNumber,
    VoidError,
)
from django_segment_seq.models import VoidedNumber
from tests.testapp.models import (
    CheckedInvoice,
    Company,
    CompanyInvoice,
    CompanyOrder,
    DailyOrder,
    Order,
    WeeklyOrder,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_records_a_number_with_its_reason_and_user():
    next_values("order", 5)
    record = void("testapp.Order.order_no", 3, " cancelled draft ", user="alice")
    stored = VoidedNumber.objects.get()
    assert (stored.pk, stored.label, stored.number, stored.reason, stored.voided_by) == (
        record.pk,
        "testapp.Order.order_no",
        3,
        "cancelled draft",
        "alice",
    )
    assert (stored.scope, stored.period, stored.text, stored.sequence) == ("", "", "", "order")
    assert stored.voided_at is not None


def test_a_number_a_row_still_holds_may_be_voided():
    order = Order.objects.create()
    void("testapp.Order.order_no", str(order.order_no), "draft kept for the record")
    assert VoidedNumber.objects.get().number == order.order_no


def test_voiding_twice_is_refused():
    next_value("order")
    void("testapp.Order.order_no", 1, "spoiled")
    with pytest.raises(AlreadyVoided, match="voided already"):
        void("testapp.Order.order_no", 1, "again")
    assert VoidedNumber.objects.get().reason == "spoiled"


def test_a_number_never_handed_out_is_refused():
    next_value("order")  # this process took 1..1000, so the row is at 1000
    with pytest.raises(NeverHandedOut, match="never handed out"):
        void("testapp.Order.order_no", 1001, "typo")
    with pytest.raises(NeverHandedOut, match="nothing yet"):
        void("testapp.Ticket.code", 1, "no row yet")
    assert not VoidedNumber.objects.exists()


def test_a_number_above_the_counter_that_a_row_holds_may_be_voided():
    Order.objects.create(order_no=5000)  # imported with its number
    void("testapp.Order.order_no", 5000, "imported twice, this copy cancelled")
    assert VoidedNumber.objects.get().number == 5000


def test_a_text_no_counter_reached_that_a_row_holds_may_be_voided(clock):
    DailyOrder.objects.create(order_no="OD20261121000050")  # imported; the day's counter has no row
    assert void("testapp.DailyOrder.order_no", "OD20261121000050", "imported, then cancelled").number == 50


@pytest.mark.parametrize("reason", ["", "   ", None])
def test_an_empty_reason_is_refused(reason):
    next_value("order")
    with pytest.raises(EmptyReason):
        void("testapp.Order.order_no", 1, reason)
    assert not VoidedNumber.objects.exists()


def test_errors_are_value_errors():
    assert issubclass(VoidError, ValueError)
    for error in (AlreadyVoided, EmptyReason, NeverHandedOut, UnknownField, UnreadableNumber):
        assert issubclass(error, VoidError)


@pytest.mark.parametrize(
    ("label", "message"),
    [
        ("testapp.Order", "APP_LABEL.Model.field"),
        ("testapp.Nothing.number", "Nothing"),
        ("testapp.Order.missing", "no field 'missing'"),
        ("testapp.Company.code", "not a SequenceField"),
    ],
)
def test_an_unknown_field_is_refused(label, message):
    with pytest.raises(UnknownField, match=message):
        void(label, 1, "reason")


def test_a_formatted_text_is_read_back_with_its_period(clock):
    first, second = DailyOrder.objects.create(), DailyOrder.objects.create()
    assert second.order_no == "OD20261122000002"
    clock.advance(days=1)
    record = void("testapp.DailyOrder.order_no", first.order_no, "customer cancelled")
    assert (record.number, record.period, record.text) == (1, "2026-11-22", "OD20261122000001")
    assert record.sequence == "daily-order@2026-11-22"


def test_a_period_shown_by_period_placeholder(clock):
    WeeklyOrder.objects.create()
    text = WeeklyOrder.objects.get().code
    record = void("testapp.WeeklyOrder.code", text, "spoiled form")
    assert (record.number, record.period) == (1, "2026-W47")


def test_a_bare_number_of_a_reset_field_is_of_the_current_period_or_the_one_given(clock):
    DailyOrder.objects.create()
    assert void("testapp.DailyOrder.order_no", 1, "cancelled").period == "2026-11-22"
    clock.advance(days=1)
    DailyOrder.objects.create()
    assert void("testapp.DailyOrder.order_no", 1, "cancelled", period="2026-11-23").text == ""
    with pytest.raises(NeverHandedOut):
        void("testapp.DailyOrder.order_no", 1, "cancelled", period="2026-11-24")


@pytest.mark.parametrize("text", ["OD2026112200000x", "INV-1", ""])
def test_a_text_the_format_cannot_read_is_refused(clock, text):
    DailyOrder.objects.create()
    with pytest.raises(UnreadableNumber):
        void("testapp.DailyOrder.order_no", text, "cancelled")


def test_a_text_for_an_integer_field_must_be_a_number():
    next_value("order")
    with pytest.raises(UnreadableNumber, match="not a number"):
        void("testapp.Order.order_no", "one", "cancelled")


def test_a_period_that_disagrees_with_the_text_is_refused(clock):
    DailyOrder.objects.create()
    with pytest.raises(ValueError, match="of period '2026-11-22'"):
        void("testapp.DailyOrder.order_no", "OD20261122000001", "cancelled", period="2026-11-21")


def test_a_scoped_field_needs_its_scope_and_takes_it_as_key_or_values():
    acme, globex = Company.objects.create(code="acme"), Company.objects.create(code="globex")
    CompanyOrder.objects.create(company=acme)
    CompanyOrder.objects.create(company=globex)
    with pytest.raises(SequenceScopeError, match="give the scope"):
        void("testapp.CompanyOrder.number", 1, "cancelled")
    by_instance = void("testapp.CompanyOrder.number", 1, "cancelled", scope={"company": acme})
    by_key = void("testapp.CompanyOrder.number", 1, "cancelled", scope=f"company={globex.pk}")
    assert (by_instance.scope, by_instance.sequence) == (f"company={acme.pk}", f"company-order@company={acme.pk}")
    assert by_key.scope == f"company={globex.pk}"
    with pytest.raises(NeverHandedOut):
        void("testapp.CompanyOrder.number", 1, "cancelled", scope={"company_id": 999})


def test_an_unscoped_field_takes_no_scope():
    next_value("order")
    with pytest.raises(SequenceScopeError, match="not scoped"):
        void("testapp.Order.order_no", 1, "cancelled", scope="company=1")


def test_an_integer_field_takes_no_period():
    next_value("order")
    with pytest.raises(ValueError, match="without periods"):
        void("testapp.Order.order_no", 1, "cancelled", period="2026")


# Issue 29, item 3: void() records only what the format makes, and no number below the minimum.
# Before: the wrong check digit was recorded as the text given, the text without its check digit as number 0, the
# unpadded text as 5, and the bare numbers 0 and -5 were recorded.
@pytest.mark.parametrize(
    ("label", "given"),
    [
        ("testapp.CheckedInvoice.number", "INV-2026-0000012"),  # the Luhn digit of INV-2026-000001 is 1
        ("testapp.CheckedInvoice.number", "INV-2026-000001"),  # the check digit left off
        ("testapp.DailyOrder.order_no", "OD202611225"),  # {value:06d} writes 000005
        ("testapp.DailyOrder.order_no", "OD20261122+00005"),
        ("testapp.DailyOrder.order_no", 0),
        ("testapp.DailyOrder.order_no", -5),
        ("testapp.Order.order_no", 0),
        ("testapp.Order.order_no", "-5"),
    ],
)
def test_what_the_format_never_made_is_refused(clock, label, given):
    CheckedInvoice.objects.create()
    for _ in range(6):
        DailyOrder.objects.create()
    Order.objects.create()
    with pytest.raises(VoidError):
        void(label, given, "cancelled")
    assert not VoidedNumber.objects.exists()


def test_a_text_with_its_check_digit_right_is_recorded(clock):
    assert CheckedInvoice.objects.create().number == "INV-2026-0000011"
    assert void("testapp.CheckedInvoice.number", "INV-2026-0000011", "cancelled").number == 1


# Issue 29, item 4. Before: GLX's text voided ACME's live invoice 1 (recorded with scope company=<acme>).
def test_a_scope_that_disagrees_with_the_text_is_refused(clock):
    acme, globex = Company.objects.create(code="ACME"), Company.objects.create(code="GLX")
    CompanyInvoice.objects.create(company=acme)
    text = CompanyInvoice.objects.create(company=globex).number
    assert text == "INV-GLX-2026-00001"
    with pytest.raises(OtherSeries, match="shows 'GLX'"):
        void("testapp.CompanyInvoice.number", text, "cancelled", scope={"company": acme})
    with pytest.raises(OtherSeries):
        void("testapp.CompanyInvoice.number", text, "cancelled", scope=f"company={acme.pk}")
    assert not VoidedNumber.objects.exists()
    record = void("testapp.CompanyInvoice.number", text, "cancelled", scope={"company": globex})
    assert record.scope == f"company={globex.pk}"


# Issue 29, item 10. Before: a 151-character user raised a raw DataError on MariaDB and PostgreSQL (SQLite stored
# it), and using="nope" was accepted.
def test_a_user_too_long_and_an_unknown_database_are_refused():
    next_value("order")
    with pytest.raises(InvalidVoidOption, match="at most 150"):
        void("testapp.Order.order_no", 1, "cancelled", user="u" * 151)
    with pytest.raises(InvalidVoidOption, match="'nope'"):
        void("testapp.Order.order_no", 1, "cancelled", using="nope")
    assert not VoidedNumber.objects.exists()
    assert void("testapp.Order.order_no", 1, "cancelled", user="u" * 150).voided_by == "u" * 150


def test_the_void_names_are_importable_from_the_package():
    import django_segment_seq
    from django_segment_seq import VoidedNumber as FromTop
    from django_segment_seq import VoidError as TopError

    assert (FromTop, TopError) == (VoidedNumber, VoidError)
    for name in ("void", "AlreadyVoided", "EmptyReason", "NeverHandedOut", "UnknownField", "UnreadableNumber"):
        assert name in django_segment_seq.__all__
