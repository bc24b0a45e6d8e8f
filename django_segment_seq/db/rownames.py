"""Sequence row names, the one place they are built and read back: a sequence's own row "order", a period's
"order@2026-11-22", a scope's "invoice@company=42" and a scope's period "invoice@company=42/2026", all within
the name column's 100 characters."""

from __future__ import annotations

from urllib.parse import unquote

from django.core.exceptions import ValidationError
from django.db.models import CharField, Q, Value
from django.db.models.functions import Concat
from django.utils.translation import gettext_lazy as _

from django_segment_seq.exceptions import SequenceScopeError

NAME_MAX_LENGTH = 100
# Between a sequence's name and the period or scope of a row derived from it.
DERIVED_MARK = "@"
# Between the field=value pairs of a scope, and between a scope and its period.
PAIR_SEPARATOR = ","
PERIOD_SEPARATOR = "/"
# A period key must fit the Sequence.period column and, after DERIVED_MARK, the row name.
KEY_MAX_LENGTH = 10
PERIOD_SUFFIX_LENGTH = len(DERIVED_MARK) + KEY_MAX_LENGTH


def validate_sequence_name(name: object) -> None:
    """Names are keys shared by every process, so refuse ones that could not be stored as given."""
    if not isinstance(name, str):
        raise ValidationError(
            _("A sequence name must be a string, not %(type)s."), code="invalid", params={"type": type(name).__name__}
        )
    if not name.strip():
        raise ValidationError(_("A sequence name must not be empty."), code="blank")
    if len(name) > NAME_MAX_LENGTH:
        raise ValidationError(
            _("Sequence name %(name)r is %(length)d characters long; the limit is %(limit)d."),
            code="max_length",
            params={"name": name[:20] + "…", "length": len(name), "limit": NAME_MAX_LENGTH},
        )
    problem = text_problem(name)
    if problem is not None:
        raise ValidationError(
            _("Sequence name %(name)s is not allowed: %(problem)s."),
            code="invalid",
            params={"name": ascii(name[:40]), "problem": problem},
        )


def text_problem(text: str) -> str | None:
    """Why `text` cannot be (part of) a row name, or None: the grammar of names, beyond their length.

    Printable characters only (no newline, carriage return, tab, NUL, escape, bidirectional override or
    other control or format character: a name goes into log lines, URLs and shells), no space at either end
    (MariaDB's collations ignore trailing spaces, so "order " would be the row "order"), and not "." or "..".
    """
    if not text.isprintable():
        return "it holds a control or format character (a newline, a tab, a NUL, an escape)"
    if text != text.strip():
        return "it starts or ends with a space"
    if text in (".", ".."):
        return "it is . or .."
    return None


def require_valid_name(name: object) -> None:
    """validate_sequence_name() for callers of the functions, who expect ValueError rather than a form error."""
    try:
        validate_sequence_name(name)
    except ValidationError as exc:
        raise ValueError(" ".join(exc.messages)) from None


def can_carry_period(sequence_name: str) -> bool:
    """Whether every period row of the sequence, "<name>@<period key>", has a name that fits."""
    return DERIVED_MARK not in sequence_name and len(sequence_name) + PERIOD_SUFFIX_LENGTH <= NAME_MAX_LENGTH


def shortest_scoped_name(sequence_name: str, scope_names: tuple[str, ...], *, with_period: bool) -> int:
    """The length of the shortest name a scope row of the sequence can have: one character per value."""
    length = len(sequence_name) + len(DERIVED_MARK) + sum(len(name) + 2 for name in scope_names)
    length += len(PAIR_SEPARATOR) * (len(scope_names) - 1)
    return length + (PERIOD_SUFFIX_LENGTH if with_period else 0)


def period_row_name(sequence_name: str, period: str | None) -> str:
    """The name of the row that counts one period of a sequence: "order@2026-11-22"."""
    return sequence_name if period is None else f"{sequence_name}{DERIVED_MARK}{period}"


def row_name(sequence_name: str, scope: str | None, period: str | None) -> str:
    """The row counting `scope` in `period`; SequenceScopeError rather than a name cut to fit the column."""
    if scope is None:
        return period_row_name(sequence_name, period)
    name = f"{sequence_name}{DERIVED_MARK}{scope}"
    if period is not None:
        name += f"{PERIOD_SEPARATOR}{period}"
    if len(name) > NAME_MAX_LENGTH:
        raise SequenceScopeError(
            sequence_name,
            f"the row of scope {shown(scope)!r}"
            + (f", period {period}," if period is not None else "")
            + f" would be named {name[:40]!r}… ({len(name)} characters), over the {NAME_MAX_LENGTH} characters "
            "of Sequence.name. Shorten the sequence name, or scope by a shorter field (a foreign key's id).",
        )
    return name


def scope_of(name: str, base_name: str | None, period: str | None) -> str | None:
    """The encoded scope of a stored row, read back from its name; None for a base or a plain period row."""
    if base_name is None or not name.startswith(base_name + DERIVED_MARK):
        return None
    rest = name[len(base_name) + len(DERIVED_MARK) :]
    if period is None:
        return rest
    if rest == period or not rest.endswith(PERIOD_SEPARATOR + period):
        return None
    return rest[: -(len(period) + len(PERIOD_SEPARATOR))]


def parse_row_name(name: str) -> tuple[str, str | None, str | None]:
    """The sequence, scope and period of a row name ("invoice@company=42/2026" -> invoice, company=42, 2026), as
    row_name() builds it; ValueError for a name row_name() would not build so."""
    sequence, mark, rest = name.partition(DERIVED_MARK)
    if not mark:
        return name, None, None
    if not sequence or not rest:
        raise ValueError(f"{name!r} is not a row name: nothing on one side of {DERIVED_MARK!r}.")
    if "=" not in rest:
        scope, period = None, rest  # a period row: "order@2026-11"
    elif PERIOD_SEPARATOR in rest:
        scope, _, period = rest.rpartition(PERIOD_SEPARATOR)  # scope values are encoded: a "/" is the period's
    else:
        scope, period = rest, None
    if row_name(sequence, scope, period) != name:
        raise ValueError(f"{name!r} is not a row name.")
    return sequence, scope, period


def scoped_rows() -> Q:
    """The per-scope rows of any sequence: derived rows not named '<base>@<period>' as plain period rows are."""
    plain_period = Concat("base_name", Value(DERIVED_MARK), "period", output_field=CharField())
    return Q(base_name__isnull=False) & (Q(period__isnull=True) | ~Q(name=plain_period))


def shown(scope: str | None) -> str:
    """A scope as people read it: "company=42, kind=Bug"."""
    if not scope:
        return ""
    return ", ".join(unquote(pair) for pair in scope.split(PAIR_SEPARATOR))
