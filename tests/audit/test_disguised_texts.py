"""The register and the gap report read concealed, check-digit texts back to the numbers behind them."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from django_segment_seq import void
from tests.testapp.models import ShopOrder

pytestmark = pytest.mark.django_db(transaction=True)


def test_gaps_of_concealed_texts_with_check_digits_are_their_numbers():
    orders = [ShopOrder.objects.create() for _ in range(6)]
    orders[2].delete()
    orders[4].delete()
    void("testapp.ShopOrder.number", orders[2].number, "spoiled form")
    out = StringIO()
    call_command("segment_seq", "gaps", "testapp.ShopOrder.number", "--json", stdout=out)
    (series,) = json.loads(out.getvalue())["series"]
    assert [(run["first"], run["last"], run["reason"]) for run in series["voided"]] == [(3, 3, "spoiled form")]
    assert [(run["first"], run["last"]) for run in series["unexplained"]] == [(5, 5)]
