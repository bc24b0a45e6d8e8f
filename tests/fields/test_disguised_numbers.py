"""Check digits and concealed numbers on real rows: saved, read back by sync, revealed, validated, and a changed key
refused before it can repeat a text."""

import threading
import time

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection, connections
from django.test import override_settings

from django_segment_seq import SequenceField, clear_cache
from django_segment_seq.db.concealed_formats import format_digest
from django_segment_seq.exceptions import ConcealKeyChanged, SequenceUnavailable
from django_segment_seq.fields.concealed import concealed_formats
from django_segment_seq.flow import key_ledger, parsing
from django_segment_seq.flow.checkdigits import has_valid_check_digits
from django_segment_seq.models import ConcealedFormat, Sequence
from django_segment_seq.sync import sync_sequence
from tests.testapp.models import CheckedInvoice, ConcealedTicket, CreditorReference, Parcel, ShopOrder

pytestmark = pytest.mark.django_db(transaction=True)
OTHER_KEY = "ffeeddccbbaa99887766554433221100"


def test_check_digits_end_every_saved_text():
    invoices = [CheckedInvoice.objects.create() for _ in range(5)]
    for invoice in invoices:
        assert has_valid_check_digits(invoice.number, "luhn")
        assert invoice.number.startswith("INV-") and len(invoice.number) == len("INV-2026-0000011")
    references = [CreditorReference.objects.create().number for _ in range(3)]
    assert all(has_valid_check_digits(text, "mod97-10") and len(text) == 12 for text in references)


def test_full_clean_refuses_a_mistyped_reference():
    order = CreditorReference.objects.create()
    order.full_clean()
    body, check = order.number[:-2], order.number[-2:]
    order.number = body + f"{(int(check) + 1) % 100:02d}"
    with pytest.raises(ValidationError) as caught:
        order.full_clean()
    assert caught.value.error_dict["number"][0].code == "check_digits"


def test_concealed_numbers_are_unique_unordered_and_revealed():
    orders = [ShopOrder.objects.create().number for _ in range(40)]
    assert len(set(orders)) == 40 and {len(text) for text in orders} == {11}  # SO + 8 digits + a Damm digit
    assert orders != sorted(orders)
    field = ShopOrder._meta.get_field("number")
    assert [field.reveal(text) for text in orders] == list(range(1, 41))
    with pytest.raises(ValueError, match="not a text"):
        field.reveal("XX123")


def test_sync_reads_concealed_texts_back_to_their_numbers():
    field = ShopOrder._meta.get_field("number")
    ShopOrder.objects.bulk_create([ShopOrder(number=field.flow.render(n, None, None)) for n in (7, 9000, 12)])
    result = sync_sequence(ShopOrder, "number")
    assert result.highest == 9000
    clear_cache()
    assert field.reveal(ShopOrder.objects.create().number) > 9000


def test_concealed_formats_are_recorded_at_migrate():
    call_command("migrate", "django_segment_seq", verbosity=0)  # post_migrate records what is missing
    recorded = set(ConcealedFormat.objects.values_list("sequence_name", "format"))
    assert {("shop-order", "SO{value:08d}"), ("concealed-ticket", "T{date:%y}{value:07d}")} <= recorded
    assert set(concealed_formats()) <= recorded


def test_a_changed_key_with_the_same_format_is_refused_at_migrate_and_before_a_number():
    call_command("migrate", "django_segment_seq", verbosity=0)
    ShopOrder.objects.create()
    value_before = Sequence.objects.get(name="shop-order").value
    with override_settings(SEGMENT_SEQ={"CONCEAL_KEY": OTHER_KEY}):
        clear_cache()
        with pytest.raises(ConcealKeyChanged, match="shop-order"):
            call_command("migrate", "django_segment_seq", verbosity=0)
        with pytest.raises(ConcealKeyChanged, match="Change the format too"):
            ShopOrder.objects.create()
    assert Sequence.objects.get(name="shop-order").value == value_before
    assert ShopOrder.objects.count() == 1


def test_a_changed_key_with_a_changed_format_starts_its_own_record():
    call_command("migrate", "django_segment_seq", verbosity=0)
    field = SequenceField("shop-order", format="SX{value:08d}", conceal=True)
    with override_settings(SEGMENT_SEQ={"CONCEAL_KEY": OTHER_KEY}):
        key_ledger.record(connection.alias, [("shop-order", field.flow.source)])
        key_ledger.verify(connection.alias, "shop-order", field.flow.source)
    keys = dict(ConcealedFormat.objects.filter(sequence_name="shop-order").values_list("format", "key_id"))
    assert len(set(keys.values())) == 2 and set(keys) == {"SO{value:08d}", "SX{value:08d}"}


def test_concealed_period_texts_stay_unique_across_the_reset():
    texts = [ConcealedTicket.objects.create().number for _ in range(20)]
    assert len(set(texts)) == 20
    field = ConcealedTicket._meta.get_field("number")
    assert sorted(field.reveal(text) for text in texts) == list(range(1, 21))


def test_a_locked_record_table_is_waited_for_at_most_lock_timeout(backend, settings):
    """Another session holds the concealed formats' table (an ALTER TABLE, say): the save ends in
    SequenceUnavailable after LOCK_TIMEOUT instead of waiting with it, and the caller's connection goes on."""
    if backend == "sqlite":
        pytest.skip("SQLite has one write lock and no table locks; a read waits with the connection's busy timeout")
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "LOCK_TIMEOUT": 0.5}
    clear_cache()
    table = connection.ops.quote_name(ConcealedFormat._meta.db_table)
    holder = connections.create_connection("default")
    outcome: list[BaseException | str] = []

    def save() -> None:
        try:
            ShopOrder.objects.create()
            outcome.append("saved")
        except BaseException as exc:  # noqa: BLE001 - what the save raised is the test's to judge
            outcome.append(exc)
        finally:
            connections.close_all()

    try:
        with holder.cursor() as cursor:
            if backend == "postgres":
                holder.set_autocommit(False)
                cursor.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            else:
                cursor.execute(f"LOCK TABLES {table} WRITE")
            started = time.monotonic()
            thread = threading.Thread(target=save, daemon=True)
            thread.start()
            thread.join(15)
            waited = time.monotonic() - started
            assert not thread.is_alive(), "the save waited for the table lock without a bound"
            if backend == "postgres":
                holder.rollback()
            else:
                cursor.execute("UNLOCK TABLES")
    finally:
        holder.close()
    assert isinstance(outcome[0], SequenceUnavailable), outcome
    assert waited < 5
    assert ShopOrder.objects.create().number  # the lock gone, numbers go on


TEST_KEY = "00112233445566778899aabbccddeeff"


# Issue 29, item 2. Before: under a changed key, reveal("SO…") of order 1 gave another number (31558455 in the
# issue) and the gap report read the texts as huge numbers, "unexplained"; after the format changed too, the old
# texts could not be revealed at all.
def test_a_text_is_revealed_only_under_the_key_that_made_it(settings):
    call_command("migrate", "django_segment_seq", verbosity=0)
    texts = [ShopOrder.objects.create().number for _ in range(3)]
    field = ShopOrder._meta.get_field("number")
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "CONCEAL_KEY": OTHER_KEY}
    with pytest.raises(ConcealKeyChanged, match="CONCEAL_KEY_FALLBACKS"):
        field.reveal(texts[0])
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "CONCEAL_KEY_FALLBACKS": [TEST_KEY]}
    assert [field.reveal(text) for text in texts] == [1, 2, 3]
    with pytest.raises(ConcealKeyChanged, match="Change the format too"):
        ShopOrder.objects.create()  # a fallback reads old texts; it never makes new ones under the old format


def test_after_a_format_change_the_old_texts_are_revealed_under_a_fallback(settings):
    call_command("migrate", "django_segment_seq", verbosity=0)
    old_text = ShopOrder.objects.create().number
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "CONCEAL_KEY": OTHER_KEY}
    field = SequenceField("shop-order", format="SX{value:08d}", conceal=True, check_digits="damm")
    key_ledger.record(connection.alias, [("shop-order", field.flow.source)])
    new_text = field.flow.render(2, None, None)
    assert parsing.reveal(field.flow, new_text) == 2
    with pytest.raises(ConcealKeyChanged):
        parsing.reveal(field.flow, old_text)
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "CONCEAL_KEY_FALLBACKS": (TEST_KEY,)}
    assert parsing.reveal(field.flow, old_text) == 1


# Issue 29, item 6. Before: each of these revealed to the order its proper text reveals (and reveal(5) raised a
# bare TypeError).
def test_reveal_takes_only_texts_the_format_makes():
    field = Parcel._meta.get_field("code")
    assert field.reveal("P001234") == 1234
    for text in ("P1234", "P 001234", "P+001234", "P0001234", "p001234", "P001234 "):
        with pytest.raises(ValueError, match="not a text"):
            field.reveal(text)
    with pytest.raises(ValueError, match="not a text"):
        field.reveal(5)


def test_reveal_of_a_concealed_text_takes_only_its_exact_digits_and_right_check_digit():
    field = ShopOrder._meta.get_field("number")
    damm = field.flow.check_digits
    text = ShopOrder.objects.create().number
    body = text[:-1]
    assert field.reveal(text) == 1
    padded = "SO0" + body[2:]  # nine digits that are the same number
    wrong = body + str((int(text[-1]) + 1) % 10)
    for other in (padded + damm.digits_for(padded), wrong, body):
        with pytest.raises(ValueError, match="not a text"):
            field.reveal(other)


# Issue 29, item 2: "check said nothing". Before: run_checks(databases=...) listed no message under a changed key.
def test_check_says_when_the_key_changed_since_migrate(settings):
    call_command("migrate", "django_segment_seq", verbosity=0)

    def concealment_checks() -> list[str]:
        found = [message.id for message in run_checks(databases=["default"])]
        return sorted(one for one in found if one in ("django_segment_seq.E053", "django_segment_seq.W003"))

    assert concealment_checks() == []
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "CONCEAL_KEY": OTHER_KEY}
    assert concealment_checks().count("django_segment_seq.E053") == 2  # shop-order and concealed-ticket
    former = {"format": "SR{value:08d}", "format_digest": format_digest("SR{value:08d}")}
    ConcealedFormat.objects.filter(sequence_name="shop-order").update(**former)  # a format the field had before
    ConcealedFormat.objects.filter(sequence_name="concealed-ticket").delete()
    key_ledger.record(connection.alias, concealed_formats())  # migrate under the new key: the new formats
    assert concealment_checks() == ["django_segment_seq.W003"]
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "CONCEAL_KEY_FALLBACKS": [TEST_KEY]}
    assert "django_segment_seq.W003" not in concealment_checks()
