"""What a request asks for: its target (a sequence, a field's texts, Snowflake ids) and how many numbers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import RequestDataTooBig, ValidationError
from django.http import HttpRequest

from django_segment_seq.conf import app_settings
from django_segment_seq.db.rownames import validate_sequence_name

SEQUENCE, FIELD, SNOWFLAKE = "sequence", "field", "snowflake"
# A count written as text: ASCII digits only ("²" and "٣" are digits to str.isdigit(), not to int() or a reader).
DIGITS = re.compile(r"\s*([0-9]{1,18})\s*")


class BadRequest(Exception):
    """The request names a bad value; `field` says which."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail


class CountLimit(Exception):
    """A count the document allows (up to SERVICE_MAX_COUNT) but this caller may not take: a refusal, not bad input."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class Target:
    """What to take from: `kind` and its name (a sequence name, a field label, a Snowflake layout)."""

    kind: str
    name: str

    @property
    def scope_name(self) -> str:
        """The name a client's patterns are matched against."""
        return f"snowflake:{self.name}" if self.kind == SNOWFLAKE else self.name

    def check(self) -> None:
        if self.kind == SEQUENCE:
            try:
                validate_sequence_name(self.name)
            except ValidationError as exc:
                raise BadRequest("name", " ".join(exc.messages)) from None


def body_fields(request: HttpRequest) -> dict[str, Any]:
    """The request's fields: the query string's, overridden by a JSON object body's or a form body's."""
    try:
        body = request.body
    except RequestDataTooBig:
        raise BadRequest("body", "The body is too large.") from None
    fields: dict[str, Any] = dict(request.GET.items())
    if not body.strip():
        return fields
    if request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        try:
            return fields | dict(request.POST.items())
        except Exception:  # noqa: BLE001 - MultiPartParserError, a bad boundary or encoding: the body's fault
            raise BadRequest("body", "The form body cannot be read.") from None
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: a body nested too deep to parse
        raise BadRequest("body", 'The body must be a JSON object, e.g. {"count": 10}.') from None
    if not isinstance(data, dict):
        raise BadRequest("body", 'The body must be a JSON object, e.g. {"count": 10}.')
    if isinstance(data.get("count"), str):  # text is for a form or a query string; JSON has numbers
        raise BadRequest("count", 'count in a JSON body is a number, e.g. {"count": 10}, not a string.')
    return fields | data


def requested_count(fields: dict[str, Any], max_count: int) -> int:
    """`count`, 1 by default; BadRequest naming the field unless it is a whole number from 1 to SERVICE_MAX_COUNT
    (the document's maximum), CountLimit when it is above this caller's `max_count`."""
    value = fields.get("count", 1)
    if isinstance(value, str):
        digits = DIGITS.fullmatch(value)
        value = int(digits[1]) if digits is not None else None
    elif isinstance(value, float) and value.is_integer() and abs(value) < 2**53:  # JSON Schema's integer: 10.0 too
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest("count", f"count must be a whole number from 1 to {max_count}.")
    most = max(max_count, app_settings()["SERVICE_MAX_COUNT"])
    if value < 1 or value > most:
        raise BadRequest("count", f"count is {value}; it must be from 1 to {most}.")
    if value > max_count:
        raise CountLimit(f"count is {value}; this client may take at most {max_count} at a time.")
    return value
