"""The checks of what a format adds to its texts: check digits (E043-E046) and concealment (E044, E046-E049, E054)."""

from __future__ import annotations

import importlib.util

from django.core import checks

from django_segment_seq.conf import app_settings
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.flow.checkdigits import DIGITS, algorithm_named
from django_segment_seq.flow.concealing import key_problem
from django_segment_seq.flow.formats import INTEGER_DIGITS, SPEC

EXTRAS = {"stdnum": "check-digits", "ff3": "conceal"}
KEY_HINT = (
    "Set it from the environment, never in code: 32, 48 or 64 hex digits, e.g. from "
    "python -c 'import secrets; print(secrets.token_hex(16))'."
)


def _missing_library(field: SequenceFieldBase, option: str, module: str) -> list[checks.CheckMessage]:
    if importlib.util.find_spec(module) is not None:
        return []
    return [
        checks.Error(
            f"SequenceField {option} needs the {module} package, which is not installed.",
            hint=f"pip install 'django-segment-seq[{EXTRAS[module]}]'",
            obj=field,
            id="django_segment_seq.E044",
        )
    ]


def _needs_template(field: SequenceFieldBase, option: str) -> list[checks.CheckMessage]:
    """Check digits and concealment work on a template's text: an integer field or a callable format has none."""
    if field.flow is not None and not field.flow.is_callable:
        return []
    what = "a callable format" if field.flow is not None else "an integer SequenceField"
    return [
        checks.Error(
            f"SequenceField {option} needs a format string; {what} has no text to add it to.",
            hint='Give a format such as format="INV{value:08d}".',
            obj=field,
            id="django_segment_seq.E046",
        )
    ]


def _presentation(spec: str) -> str:
    found = SPEC.match(spec)
    return (found["type"] or "") if found else ""


def check_digit_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """check_digits names a known algorithm, can be computed, and reads every character the number is written in."""
    if field.check_digits is None:
        return []
    try:
        algorithm = algorithm_named(field.check_digits)
    except ValueError as exc:
        return [
            checks.Error(
                f"SequenceField check_digits: {exc}.",
                hint="Use luhn, damm, verhoeff or mod97-10.",
                obj=field,
                id="django_segment_seq.E043",
            )
        ]
    errors = _needs_template(field, "check_digits") or _missing_library(field, "check_digits", "stdnum")
    if errors or field.flow is None:
        return errors
    letters = [spec for spec in field.flow.value_specs if set(INTEGER_DIGITS[_presentation(spec)]) - set(DIGITS)]
    if algorithm.reads == DIGITS and letters:
        return [
            checks.Error(
                f"SequenceField check_digits={algorithm.name!r} reads digits only, but {{value:{letters[0]}}} "
                "writes letters too: a mistyped letter would pass.",
                hint='Write the number in decimal, or use check_digits="mod97-10", which reads letters too.',
                obj=field,
                id="django_segment_seq.E045",
            )
        ]
    return []


def conceal_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """conceal=True has a template, the ff3 package, a usable key and a wide enough, fixed-width number."""
    if field.conceal is False:
        return []
    if not isinstance(field.conceal, bool):
        return [
            checks.Error(
                f"SequenceField conceal={field.conceal!r} must be True or False.",
                hint="Pass conceal=True to conceal the numbers, or leave it out.",
                obj=field,
                id="django_segment_seq.E054",
            )
        ]
    errors = _needs_template(field, "conceal") or _missing_library(field, "conceal", "ff3")
    return errors or _key_errors(field) or _concealed_width_errors(field)


def _key_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """SEGMENT_SEQ["CONCEAL_KEY"] is set (E047) to a usable AES key (E048)."""
    key = app_settings().get("CONCEAL_KEY")
    problem = key_whitespace_problem(key) or key_problem(key)
    if problem is not None and "not set" in problem:
        return [
            checks.Error(
                f"SequenceField conceal=True: {problem}.",
                hint=KEY_HINT,
                obj=field,
                id="django_segment_seq.E047",
            )
        ]
    if problem is not None:
        return [
            checks.Error(
                f"SequenceField conceal=True: {problem}.",
                hint=KEY_HINT,
                obj=field,
                id="django_segment_seq.E048",
            )
        ]
    return []


def key_whitespace_problem(key: object) -> str | None:
    """Whitespace in a key, said as such: bytes.fromhex skips it, so a key read with its newline from a file would
    otherwise be reported as one hex digit too long."""
    if not isinstance(key, str) or not any(character.isspace() for character in key):
        return None
    if not key.strip():
        return "SEGMENT_SEQ['CONCEAL_KEY'] is only whitespace"
    if any(character.isspace() for character in key.strip()):
        return "SEGMENT_SEQ['CONCEAL_KEY'] has whitespace in it; a key is its hex digits alone"
    return (
        "SEGMENT_SEQ['CONCEAL_KEY'] has whitespace around it (a newline read with it from a file or the "
        "environment?); a key is its hex digits alone: strip it where it is read"
    )


def _concealed_width_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """The format writes one zero-padded decimal {value} wide enough for FF3-1 and narrow enough for a BIGINT."""
    if field.flow is None or field.flow.conceal_problem is None:
        return []
    return [
        checks.Error(
            f"SequenceField conceal=True: {field.flow.conceal_problem}.",
            hint='Use one zero-padded decimal {value} of 6 to 18 digits, e.g. format="OD{value:08d}".',
            obj=field,
            id="django_segment_seq.E049",
        )
    ]
