"""Concealed and check-digit texts under real concurrency: processes save orders and references at once, and every
text and every number behind it is handed out once."""

from django_segment_seq.flow.checkdigits import has_valid_check_digits
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.testapp.models import CreditorReference, ShopOrder

WORKERS = 4
EACH = 120


def decoded(number: int) -> str:
    return number.to_bytes((number.bit_length() + 7) // 8, "big").decode()


def test_processes_hand_out_each_concealed_and_checked_text_once(run_workers):
    for name in ("shop-order", "creditor-ref"):
        Sequence.objects.create(name=name, step=9)  # small ranges: many allocations race
    results = run_workers([("disguised-save", "-", EACH)] * WORKERS, timeout=240)
    texts = [decoded(number) for got in results for number in got]
    assert_unique(texts, WORKERS * EACH)
    orders = [text for text in texts if text.startswith("SO")]
    references = [text for text in texts if text.startswith("RF")]
    assert len(orders) == len(references) == WORKERS * EACH // 2
    assert all(has_valid_check_digits(text, "damm") for text in orders)
    assert all(has_valid_check_digits(text, "mod97-10") for text in references)
    field = ShopOrder._meta.get_field("number")
    assert_unique([field.reveal(text) for text in orders], len(orders))  # the numbers behind the texts too
    assert sorted(ShopOrder.objects.values_list("number", flat=True)) == sorted(orders)
    assert sorted(CreditorReference.objects.values_list("number", flat=True)) == sorted(references)
