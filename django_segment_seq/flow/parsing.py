"""Read the number back out of a flow number's text, so a sequence can be moved past texts stored or imported."""

from __future__ import annotations

import re
import string
from datetime import datetime

from django_segment_seq.db.routing import sequence_database
from django_segment_seq.exceptions import ConcealKeyChanged
from django_segment_seq.flow import key_ledger
from django_segment_seq.flow.formats import SPEC, FlowFormat

# strftime directives whose output has a known shape; a format using any other one cannot be read back.
DATE_DIRECTIVES: dict[str, str] = {
    "Y": r"\d{4}",
    "G": r"\d{4}",
    "y": r"\d{2}",
    "m": r"\d{2}",
    "d": r"\d{2}",
    "H": r"\d{2}",
    "I": r"\d{2}",
    "M": r"\d{2}",
    "S": r"\d{2}",
    "U": r"\d{2}",
    "W": r"\d{2}",
    "V": r"\d{2}",
    "j": r"\d{3}",
    "f": r"\d{6}",
    "u": r"\d",
    "w": r"\d",
    "%": "%",
}
# An int format type -> the digits it writes and their base.
_INT_TYPES: dict[str | None, tuple[str, int]] = {
    None: ("0-9", 10),
    "d": ("0-9", 10),
    "n": ("0-9", 10),
    "x": ("0-9a-f", 16),
    "X": ("0-9A-F", 16),
    "o": ("0-7", 8),
    "b": ("01", 2),
}


class UnparseableFormat(ValueError):
    """The format cannot be read back (a callable, or a spec whose output has no known shape)."""


class FormatParser:
    """Matches whole texts made by one format and returns their number; texts of other shapes give None.

    With `moment`, `{date}` must show exactly that instant's date (the texts of one period); without
    it, any date of the spec's shape matches. `{instance.…}` matches any text, as short as possible.
    `strict` takes only texts the format writes: each {value} as its spec writes it, check digits right. A
    concealed number is revealed under `key`, by default the key its format was recorded with (key_ledger).
    """

    def __init__(
        self, flow: FlowFormat, moment: datetime | None = None, *, strict: bool = False, key: str | None = None
    ) -> None:
        if flow.is_callable:
            raise UnparseableFormat(
                f"the format is a callable ({getattr(flow.source, '__qualname__', flow.source)!r}), "
                "which cannot be read back into a number"
            )
        if flow.problems:
            raise UnparseableFormat(f"the format is invalid: {flow.problems[0]}")
        if not flow.has_value:
            raise UnparseableFormat(f"the format {flow.source!r} has no {{value}}")
        self.source: str = flow.source
        self.prefix = ""  # literal text every matching text starts with, for narrowing the query
        self._bases: list[tuple[int, bool]] = []  # per {value}: base, and whether it carries a 0x-style prefix
        self._dates = 0  # {date} placeholders, each read into a group d0, d1, ...
        self._periods = 0  # {period} placeholders, each read into a group p0, p1, ...
        self._specs: list[str] = []  # per {value}: its spec, to compare a strict text with what the spec writes
        self.instance_fields: list[tuple[str, str, str | None]] = []  # per {instance.…}: field, spec, conversion
        pattern: list[str] = []
        leading = True
        for literal, field, spec, _conversion in string.Formatter().parse(self.source):
            pattern.append(re.escape(literal))
            if leading:
                self.prefix += literal
            if field is None:
                continue
            if field == "date" and moment is not None:
                shown = format(moment, spec or "")
                pattern.append(f"(?P<d{self._dates}>{re.escape(shown)})")
                self._dates += 1
                if leading:
                    self.prefix += shown
                continue
            leading = False
            if field == "date":
                pattern.append(f"(?P<d{self._dates}>{self._date_pattern(spec or '')})")
                self._dates += 1
            elif field == "value":
                pattern.append(f"(?P<v{len(self._bases)}>{self._value_pattern(spec or '')})")
                self._specs.append(spec or "")
            elif field == "period":
                pattern.append(f"(?P<p{self._periods}>.*?)")
                self._periods += 1
            else:
                pattern.append(f"(?P<i{len(self.instance_fields)}>.*?)")
                self.instance_fields.append((field, spec or "", _conversion))
        if flow.check_width:  # stripped; verified only when strict: a stored text is what was handed out
            pattern.append(f"[0-9]{{{flow.check_width}}}")
        self._regex = re.compile("".join(pattern), re.DOTALL)
        self._concealment = flow.concealment
        self._strict = strict
        self._check_digits = flow.check_digits if strict else None
        self._key = key
        self._key_error: ConcealKeyChanged | None = None

    def _date_pattern(self, spec: str) -> str:
        if not spec:  # str(datetime): date, time, optional microseconds and offset
            return r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{6})?(?:[+-]\d{2}:\d{2})?"
        pieces = re.split(r"(%.)", spec)
        out = []
        for piece in pieces:
            if piece.startswith("%") and len(piece) == 2:
                if piece[1] not in DATE_DIRECTIVES:
                    raise UnparseableFormat(
                        f"the format {self.source!r} uses {piece} in {{date}}, whose text cannot be read back"
                    )
                out.append(DATE_DIRECTIVES[piece[1]])
            else:
                out.append(re.escape(piece))
        return "".join(out)

    def _value_pattern(self, spec: str) -> str:
        match = SPEC.match(spec)
        kind = match["type"] if match else "?"
        if match is None or kind not in _INT_TYPES:
            raise UnparseableFormat(f"the format {self.source!r} writes {{value:{spec}}}, which cannot be read back")
        digits, base = _INT_TYPES[kind]
        self._bases.append((base, bool(match["alt"])))
        extra = re.escape((match["grouping"] or "") + (match["fill"] or "") + (" " if match["width"] else ""))
        prefix = {16: "(?:0[xX])?", 8: "(?:0[oO])?", 2: "(?:0[bB])?"}.get(base, "") if match["alt"] else ""
        return f"[-+ ]?{prefix}[{digits}{extra}]+"

    def number(self, text: str | None) -> int | None:
        """The number in `text`, or None when the text was not made by this format."""
        parts = self.parts(text)
        return None if parts is None else parts[0]

    def parts(self, text: str | None) -> tuple[int, tuple[str, ...], tuple[str, ...]] | None:
        """The number in `text` and the texts its {date} and {period} placeholders show there, in the format's order;
        None when the text was not made by this format. ConcealKeyChanged when the key that made it is unknown."""
        found = self._match(text)
        if found is None:
            return None
        numbers = []
        for index, (base, prefixed) in enumerate(self._bases):
            raw = found[f"v{index}"]
            sign = -1 if raw.lstrip(" ").startswith("-") else 1
            body = re.sub(r"^[-+ ]*(?:0[xXoObB])?", "", raw) if prefixed else raw
            digits = "".join(ch for ch in body if ch.lower() in "0123456789abcdef"[:base])
            if not digits:
                return None
            numbers.append(sign * int(digits, base))
            if self._strict and format(numbers[-1], self._specs[index]) != raw:
                return None  # "5" for {value:05d}, "+5", "005": not how the format writes the number
        if len(set(numbers)) != 1:
            return None  # two {value}s that disagree: not a text this format made
        if self._concealment is not None:
            if not 0 <= numbers[0] < 10**self._concealment.width:
                return None  # more digits than the permutation's: not a text this format made
            numbers = [self._concealment.reveal(numbers[0], self.key())]
        dates = tuple(found[f"d{index}"] for index in range(self._dates))
        return numbers[0], dates, tuple(found[f"p{index}"] for index in range(self._periods))

    def instance_texts(self, text: str | None) -> tuple[str, ...] | None:
        """What each {instance.…} placeholder shows in `text`, in the format's order (see instance_fields)."""
        found = self._match(text)
        return None if found is None else tuple(found[f"i{index}"] for index in range(len(self.instance_fields)))

    def _match(self, text: str | None) -> re.Match[str] | None:
        if not text or not isinstance(text, str):
            return None
        if self._check_digits is not None and not self._check_digits.is_valid(text):
            return None  # a mistyped reference, not a text this format made
        return self._regex.fullmatch(text)

    def key(self) -> str:
        """The key this format's texts were concealed under; asked of the ledger once, ConcealKeyChanged when the
        key is configured neither as CONCEAL_KEY nor among CONCEAL_KEY_FALLBACKS."""
        if self._key_error is not None:
            raise self._key_error
        if self._key is None:
            name = self._concealment.sequence_name if self._concealment is not None else ""
            try:
                self._key = key_ledger.key_for(sequence_database(), name, self.source)
            except ConcealKeyChanged as exc:
                self._key_error = exc
                raise
        return self._key


def parsers_of(flow: FlowFormat, *, strict: bool = False) -> list[FormatParser]:
    """Parsers of a field's format and, for a concealed one, of every format its sequence was recorded with before
    (a changed format keeps its old texts readable under their own key); UnparseableFormat for the field's own."""
    parsers = [FormatParser(flow, strict=strict)]
    if flow.concealment is None:
        return parsers
    name = flow.concealment.sequence_name
    check = flow.check_digits.name if flow.check_digits is not None else None
    for source in key_ledger.former_formats(sequence_database(), name, flow.source):
        former = FlowFormat(source, check_digits=check, conceal_as=name)
        try:
            parsers.append(FormatParser(former, strict=strict))
        except UnparseableFormat:
            continue
    return parsers


def reveal(flow: FlowFormat, text: object) -> int:
    """The number behind one text the format (or a format its sequence had before) makes, exactly as it writes it;
    ValueError for anything else, ConcealKeyChanged when the key that made it is no longer configured."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is a {type(text).__name__}, not a text; reveal() reads the texts a format makes")
    refused: ConcealKeyChanged | None = None
    for parser in parsers_of(flow, strict=True):
        try:
            parts = parser.parts(text)
        except ConcealKeyChanged as exc:
            refused = refused or exc
            continue
        if parts is not None:
            return parts[0]
    if refused is not None:
        raise refused
    raise ValueError(f"{text!r} is not a text its format {flow.source!r} makes")


# A whole decimal number, as a text column numbered by code or by another system holds it ("100001", " 42").
WHOLE_NUMBER = re.compile(r"\s*(?P<value>[-+]?[0-9]+)\s*")


class TextNumbers:
    """Reads the numbers of a text column that no SequenceField made, to seed a sequence above them: through a
    format as a SequenceField writes it (FormatParser), a regular expression whose group `value` (or only group) is
    the number, or, without either, as a whole decimal number. Texts of other shapes give None.

    ValueError for both options at once or a pattern that is not one; UnparseableFormat for a format that cannot be
    read back.
    """

    def __init__(self, *, pattern: str | None = None, format: str | None = None) -> None:
        self.prefix = ""  # literal text every readable text starts with, for narrowing the query
        self._parser: FormatParser | None = None
        if pattern is not None and format is not None:
            raise ValueError("give a pattern or a format, not both")
        if format is not None:
            self._parser = FormatParser(FlowFormat(format))
            self.prefix = self._parser.prefix
            self._regex = WHOLE_NUMBER
            return
        if pattern is None:
            self._regex = WHOLE_NUMBER
            return
        try:
            self._regex = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"the pattern {pattern!r} is not a regular expression: {exc}") from None
        if "value" not in self._regex.groupindex and self._regex.groups != 1:
            raise ValueError(
                f"the pattern {pattern!r} has {self._regex.groups} groups: name the number's group "
                "(?P<value>...), or give the pattern only that group, e.g. 'ORD-([0-9]+)'"
            )

    def number(self, text: object) -> int | None:
        """The number in `text`, or None when it is not a text of the expected shape."""
        if not isinstance(text, str):
            return None
        if self._parser is not None:
            return self._parser.number(text)
        found = self._regex.fullmatch(text)
        if found is None:
            return None
        group = "value" if "value" in self._regex.groupindex else 1
        try:
            return int(found[group])
        except (TypeError, ValueError):
            return None  # the group matched no digits, or none at all
