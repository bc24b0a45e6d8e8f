"""A formatted field's stored text read back into its number and the period it was counted in, from the text alone.

The period is what the text's {period} shows, else the period its first {date} falls in (read with the
date's own spec); a field without reset counts without periods. The row's date column is not read: the
text is what the series shows, and what an accountant sees missing.
"""

from __future__ import annotations

from datetime import datetime, time
from typing import Any

from django_segment_seq.exceptions import ConcealKeyChanged
from django_segment_seq.flow.parsing import FormatParser, parsers_of

# Read back: (number, period key or None for a field without reset).
Reading = tuple[int, str | None]


class TextReader:
    """Reads the texts of one formatted field or rule (anything with its `flow` and `reset_rule`), and of the formats
    a concealed one had before; UnparseableFormat when its format cannot be read back. `strict` reads only texts
    exactly as the format writes them (void() does)."""

    def __init__(self, field: Any, *, strict: bool = False) -> None:
        self.parsers = parsers_of(field.flow, strict=strict)
        self.parser = self.parsers[0]
        self.matched: FormatParser | None = None  # the parser that read the last text read
        self.locked: ConcealKeyChanged | None = None  # the first text whose key is not configured, for the report
        self.reset = field.reset_rule
        self.keyed = self.reset.is_named or self.reset.is_callable
        self.date_spec = field.flow.date_specs[0] if field.flow.date_specs else None
        self.period_spec = field.flow.period_specs[0] if field.flow.period_specs else ""
        self.by_date: dict[str, str | None] = {}  # a date's text -> its period: few dates, many texts

    def read(self, text: str | None) -> Reading | None:
        """The number and period of `text`; None when the format did not make it or its period cannot be told."""
        parts = self.parts(text)
        if parts is None:
            return None
        number, dates, shown = parts
        if not self.keyed:
            return number, None
        if shown:
            return number, self.reset.key_shown(shown[0].strip(), self.period_spec)
        if not dates or not self.reset.is_named:
            return None
        period = self.by_date.get(dates[0], "")
        if period == "":
            period = self.by_date[dates[0]] = self.date_period(dates[0])
        return None if period is None else (number, period)

    def parts(self, text: str | None) -> tuple[int, tuple[str, ...], tuple[str, ...]] | None:
        """What the first format that made `text` reads in it; None also for a text under a key not configured."""
        for parser in self.parsers:
            try:
                parts = parser.parts(text)
            except ConcealKeyChanged as exc:
                self.locked = self.locked or exc
                continue
            if parts is not None:
                self.matched = parser
                return parts
        return None

    def instance_texts(self, text: str) -> dict[str, str]:
        """What each plain {instance.NAME} placeholder (no spec, no conversion) shows in `text`, by NAME, as the
        format that read it last writes them: the scope values a text shows."""
        parser = self.matched
        if parser is None or not parser.instance_fields:
            return {}
        shown = parser.instance_texts(text) or ()
        found = {}
        for (path, spec, conversion), seen in zip(parser.instance_fields, shown, strict=False):
            name = path.removeprefix("instance.")
            if path.startswith("instance.") and name.isidentifier() and not spec and conversion is None:
                found[name] = seen
        return found

    def date_period(self, text: str) -> str | None:
        """The named period of a {date} text, or None when its spec cannot be read back into a day."""
        spec = self.date_spec
        if spec and ("%G" in spec or "%V" in spec) and "%u" not in spec and "%A" not in spec and "%a" not in spec:
            text, spec = f"{text} 1", f"{spec} %u"  # an ISO week alone names no day: take its Monday
        try:
            moment = datetime.strptime(text, spec) if spec else datetime.fromisoformat(text)
        except ValueError:
            return None
        if self.reset.from_record:
            return None  # a day names no fiscal year until the record says where its year starts
        period: str | None = self.reset.key(datetime.combine(moment.date(), time(12)))
        return period
