"""Check digits appended to a flow number, so a reference typed by a person with one digit wrong is caught.

The arithmetic is python-stdnum's (the `check-digits` extra). Luhn, Damm and Verhoeff read the text's digits;
ISO 7064 MOD 97-10 (as in IBAN and RF creditor references) reads its digits and letters. Anything else, the
format's separators for instance, is skipped: it is fixed by the format, and reading a text back checks it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.deconstruct import deconstructible
from django.utils.translation import gettext_lazy as _

# The characters each kind of algorithm reads.
DIGITS = "0123456789"
DIGITS_AND_LETTERS = DIGITS + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class CheckDigitsUnavailable(ImportError):
    """python-stdnum, which computes the check digits, is not installed."""


@dataclass(frozen=True)
class Algorithm:
    """One check-digit scheme: stdnum's module, how many characters it appends and which it reads."""

    name: str
    module: str
    width: int
    reads: str

    def _stdnum(self) -> Any:
        try:
            return importlib.import_module(self.module)
        except ImportError as exc:
            raise CheckDigitsUnavailable(
                f"check_digits={self.name!r} needs python-stdnum: pip install 'django-segment-seq[check-digits]'"
            ) from exc

    def payload(self, text: str) -> str:
        """The characters of `text` this scheme reads, letters in upper case."""
        return "".join(char for char in text.upper() if char in self.reads)

    def digits_for(self, text: str) -> str:
        """The check characters to append to `text`."""
        stdnum = self._stdnum()
        payload = self.payload(text)
        if self.width == 2:
            return str(stdnum.calc_check_digits(payload))
        return str(stdnum.calc_check_digit(payload))

    def is_valid(self, text: str) -> bool:
        """Whether `text` ends in the right check characters for what comes before them."""
        if len(text) <= self.width:
            return False
        body, check = text[: -self.width], text[-self.width :]
        if not check.isdigit() or not self.payload(body):
            return False
        return self.digits_for(body) == check


ALGORITHMS: dict[str, Algorithm] = {
    algorithm.name: algorithm
    for algorithm in (
        Algorithm("luhn", "stdnum.luhn", 1, DIGITS),
        Algorithm("damm", "stdnum.damm", 1, DIGITS),
        Algorithm("verhoeff", "stdnum.verhoeff", 1, DIGITS),
        Algorithm("mod97-10", "stdnum.iso7064.mod_97_10", 2, DIGITS_AND_LETTERS),
    )
}


def algorithm_named(name: str) -> Algorithm:
    """The algorithm called `name`; a ValueError listing the known ones otherwise."""
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown check-digit algorithm {name!r}; use one of {', '.join(ALGORITHMS)}") from None


def has_valid_check_digits(text: str, algorithm: str) -> bool:
    """Whether a text typed by a person ends in the check digits `algorithm` gives for the rest of it."""
    return algorithm_named(algorithm).is_valid(text)


@deconstructible
class CheckDigitValidator:
    """A form and model validator refusing a text whose check digits are wrong: a mistyped reference."""

    message = _("%(value)s is not a valid reference: its check digits do not match.")
    code = "check_digits"

    def __init__(self, algorithm: str) -> None:
        self.algorithm = algorithm_named(algorithm).name

    def __call__(self, value: Any) -> None:
        if not has_valid_check_digits(str(value), self.algorithm):
            raise ValidationError(self.message, code=self.code, params={"value": value})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CheckDigitValidator) and other.algorithm == self.algorithm

    def __hash__(self) -> int:
        return hash(self.algorithm)
