"""Concealed numbers: an FF3-1 permutation of fixed-width decimal numbers, keyed from settings, tweaked per sequence."""

import itertools
from datetime import datetime

import pytest
from django.test import override_settings

from django_segment_seq.exceptions import SequenceMisconfigured
from django_segment_seq.flow.concealing import Concealment, key_id, key_problem, tweak_of
from django_segment_seq.flow.formats import FlowFormat
from django_segment_seq.flow.parsing import FormatParser

MOMENT = datetime(2026, 11, 25, 12)
OTHER_KEY = "ffeeddccbbaa99887766554433221100"


def test_a_whole_small_domain_is_permuted_one_to_one():
    concealment = Concealment("order", 6)
    shown = [concealment.conceal(number) for number in range(0, 1_000_000, 97)]
    assert len(set(shown)) == len(shown)
    assert all(0 <= number < 1_000_000 for number in shown)
    assert [concealment.reveal(number) for number in shown] == list(range(0, 1_000_000, 97))


def test_consecutive_numbers_look_unrelated():
    concealment = Concealment("order", 8)
    shown = [concealment.conceal(number) for number in range(1, 101)]
    steps = {b - a for a, b in itertools.pairwise(shown)}
    assert len(steps) > 90  # a counter would show one step; a permutation nearly a hundred


def test_two_sequences_under_one_key_do_not_line_up():
    assert tweak_of("order") != tweak_of("invoice")
    first, second = Concealment("order", 8), Concealment("invoice", 8)
    assert [first.conceal(n) for n in range(1, 20)] != [second.conceal(n) for n in range(1, 20)]


def test_another_key_gives_another_permutation_and_another_fingerprint():
    before = Concealment("order", 8).conceal(1)
    with override_settings(SEGMENT_SEQ={"CONCEAL_KEY": OTHER_KEY}):
        assert Concealment("order", 8).conceal(1) != before
    assert key_id(OTHER_KEY) != key_id("00112233445566778899aabbccddeeff")


def test_the_format_keeps_its_width_and_reads_back():
    fmt = FlowFormat("OD{date:%Y%m%d}{value:08d}", conceal_as="order")
    texts = [fmt.render(number, None, MOMENT) for number in range(1, 200)]
    assert {len(text) for text in texts} == {18}
    assert len(set(texts)) == len(texts)
    parser = FormatParser(fmt, key="00112233445566778899aabbccddeeff")  # no database: the key given, not looked up
    assert [parser.number(text) for text in texts] == list(range(1, 200))
    assert fmt.cap == 99_999_999


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("OD{value:05d}", "concealing needs 6 to 18"),
        ("OD{value:019d}", "concealing needs 6 to 18"),
        ("OD{value}", "fixed number of decimal digits"),
        ("OD{value:08x}", "fixed number of decimal digits"),
        ("OD{value:08d}-{value:09d}", "fixed number of decimal digits"),
    ],
)
def test_formats_that_cannot_be_concealed(source, problem):
    fmt = FlowFormat(source, conceal_as="order")
    assert fmt.concealment is None and problem in (fmt.conceal_problem or "")


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        (None, "not set"),
        ("", "not set"),
        ("00112233", "has 8 hex digits"),
        ("zz112233445566778899aabbccddeeff", "not made of hex digits"),
        (1234, "must be a string"),
    ],
)
def test_keys_refused(key, problem):
    assert problem in (key_problem(key) or "")
    with override_settings(SEGMENT_SEQ={"CONCEAL_KEY": key}), pytest.raises(SequenceMisconfigured, match=problem):
        Concealment("order", 8).conceal(1)


def test_a_text_with_too_many_digits_is_not_read_back():
    fmt = FlowFormat("OD{value:08d}", conceal_as="order")
    assert FormatParser(fmt).number("OD123456789") is None


def test_a_malformed_fallback_key_is_check_e052(settings):
    from django.core.checks import run_checks

    key = "00112233445566778899aabbccddeeff"
    settings.SEGMENT_SEQ = {"CONCEAL_KEY": key, "CONCEAL_KEY_FALLBACKS": [OTHER_KEY, "zz", key[:30]]}
    errors = [message for message in run_checks() if message.id.startswith("django_segment_seq")]
    assert [message.id for message in errors] == ["django_segment_seq.E052"] * 2
    assert "CONCEAL_KEY_FALLBACKS'][1] is not made of hex digits" in errors[0].msg
    assert "[2] has 30 hex digits" in errors[1].msg
    settings.SEGMENT_SEQ = {"CONCEAL_KEY": key, "CONCEAL_KEY_FALLBACKS": OTHER_KEY}  # a string, not a list
    assert [message.id for message in run_checks()] == ["django_segment_seq.E003"]
