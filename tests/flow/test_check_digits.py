"""Check digits: python-stdnum's arithmetic over the text's digits (or digits and letters), appended and read back."""

from datetime import datetime

import pytest
from django.core.exceptions import ValidationError

from django_segment_seq.flow.checkdigits import ALGORITHMS, CheckDigitValidator, has_valid_check_digits
from django_segment_seq.flow.formats import FlowFormat
from django_segment_seq.flow.parsing import FormatParser

MOMENT = datetime(2026, 11, 25, 12)


@pytest.mark.parametrize(
    ("algorithm", "body", "check"),
    [
        ("luhn", "7992739871", "3"),  # the textbook Luhn example
        ("damm", "572", "4"),  # Damm's own example
        ("verhoeff", "236", "3"),  # Verhoeff's own example
        ("mod97-10", "RF00000123", "69"),  # ISO 7064 MOD 97-10 reads letters: 98 - (271500000123 * 100) mod 97
    ],
)
def test_known_check_digits(algorithm, body, check):
    assert ALGORITHMS[algorithm].digits_for(body) == check
    assert has_valid_check_digits(body + check, algorithm)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_every_single_digit_typo_is_caught(algorithm):
    fmt = FlowFormat("INV-{date:%Y}-{value:06d}", check_digits=algorithm)
    for number in (1, 42, 999_999):
        text = fmt.render(number, None, MOMENT)
        assert has_valid_check_digits(text, algorithm)
        for index, char in enumerate(text[:-1]):
            if char.isdigit():
                for other in "0123456789".replace(char, ""):
                    typo = text[:index] + other + text[index + 1 :]
                    assert not has_valid_check_digits(typo, algorithm), typo


@pytest.mark.parametrize("algorithm", ["luhn", "damm", "verhoeff", "mod97-10"])
def test_adjacent_swaps_are_caught_except_luhns_09(algorithm):
    fmt = FlowFormat("{value:06d}", check_digits=algorithm)
    text = fmt.render(123_456, None, MOMENT)
    swapped = text[1] + text[0] + text[2:]
    assert not has_valid_check_digits(swapped, algorithm)


def test_the_text_is_read_back_without_its_check_digits():
    fmt = FlowFormat("OD{date:%Y%m%d}{value:06d}", check_digits="mod97-10")
    text = fmt.render(123, None, MOMENT)
    assert text == "OD20261125000123" + ALGORITHMS["mod97-10"].digits_for("OD20261125000123")
    assert FormatParser(fmt).number(text) == 123
    assert FormatParser(fmt, MOMENT).parts(text) == (123, ("20261125",), ())


def test_widest_and_default_max_length_count_the_check_digits():
    plain, checked = FlowFormat("INV{value:06d}"), FlowFormat("INV{value:06d}", check_digits="mod97-10")
    assert checked.widest() == plain.widest() + 2
    assert FlowFormat("INV{value:06d}", check_digits="luhn").widest() == plain.widest() + 1


def test_an_unknown_algorithm_is_kept_as_a_problem_for_the_checks():
    fmt = FlowFormat("INV{value:06d}", check_digits="crc32")
    assert fmt.check_digits is None and "crc32" in (fmt.check_digits_problem or "")
    with pytest.raises(ValueError, match="luhn, damm, verhoeff, mod97-10"):
        has_valid_check_digits("123", "crc32")


def test_the_validator_refuses_a_typo_and_accepts_the_text():
    validate = CheckDigitValidator("luhn")
    validate("79927398713")
    with pytest.raises(ValidationError) as caught:
        validate("79927398714")
    assert caught.value.code == "check_digits"
    assert CheckDigitValidator("luhn") == validate and CheckDigitValidator("damm") != validate
    assert validate.deconstruct() == ("django_segment_seq.flow.checkdigits.CheckDigitValidator", ("luhn",), {})


@pytest.mark.parametrize("text", ["", "7", "ABC", "1234-X"])
def test_short_or_letter_only_texts_are_not_valid(text):
    assert not has_valid_check_digits(text, "luhn")
