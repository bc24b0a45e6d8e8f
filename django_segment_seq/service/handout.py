"""Taking what a request asks for: a contiguous block of a sequence, texts of a formatted field, Snowflake ids."""

from __future__ import annotations

from json.encoder import encode_basestring_ascii
from typing import Any

from asgiref.sync import sync_to_async

from django_segment_seq.api import anext_values, cached_values, next_values
from django_segment_seq.fields.labels import UnknownFieldLabel, field_of
from django_segment_seq.service.requests import FIELD, SEQUENCE, BadRequest, Target
from django_segment_seq.snowflake.generator import next_snowflake
from django_segment_seq.snowflake.layouts import get_layout


class NotFound(Exception):
    """No such field or layout."""


# A block's answer as json.dumps() writes it (Django's JsonResponse): ASCII, ", " and ": " between items.
BLOCK_JSON = b'{"name": %s, "first": %d, "last": %d, "count": %d, "first_text": "%d", "last_text": "%d"}'


class BlockBody(dict[str, Any]):
    """A block's answer body, which knows its JSON: one formatting of bytes, a third of what the encoder costs on the
    fast path's every request."""

    def json(self) -> bytes:
        first, last = self["first"], self["last"]
        return BLOCK_JSON % (encode_basestring_ascii(self["name"]).encode(), first, last, self["count"], first, last)


def block(name: str, numbers: range) -> BlockBody:
    """A block's answer: its bounds, as numbers and as strings (JavaScript loses integers above 2**53)."""
    first, last = numbers[0], numbers[-1]
    return BlockBody(
        name=name,
        first=first,
        last=last,
        count=len(numbers),
        first_text=str(first),
        last_text=str(last),
    )


def field_texts(label: str, count: int) -> dict[str, Any]:
    """`count` values of a field, rendered as the field renders them at save, for an empty record."""
    try:
        model, field = field_of(label)
    except UnknownFieldLabel as exc:
        raise NotFound(str(exc)) from None
    if field.scope is not None or field.gapless:
        kind = "scoped" if field.scope is not None else "gapless"
        raise BadRequest(
            "label", f"{label} is {kind}: its numbers depend on its record, so the service does not hand them out."
        )
    values = [field.pre_save(model(), True) for _ in range(count)]
    if field.flow is None:
        return {"label": label, "values": values, "texts": [str(value) for value in values]}
    return {"label": label, "texts": values}


def snowflakes(layout: str, count: int) -> dict[str, Any]:
    try:
        get_layout(layout)
    except ValueError as exc:
        raise NotFound(str(exc)) from None
    ids = [next_snowflake(layout=layout) for _ in range(count)]
    return {"layout": layout, "ids": ids, "id_texts": [str(value) for value in ids]}


def take(target: Target, count: int) -> dict[str, Any]:
    """The answer's body for `count` numbers of `target` (sync code)."""
    if target.kind == SEQUENCE:
        return block(target.name, next_values(target.name, count))
    if target.kind == FIELD:
        return field_texts(target.name, count)
    return snowflakes(target.name, count)


def taken_at_once(target: Target, count: int) -> dict[str, Any] | None:
    """take() when the process's cached range holds the block (code on an event loop need not await); else None."""
    if target.kind != SEQUENCE:
        return None
    numbers = cached_values(target.name, count)
    return None if numbers is None else block(target.name, numbers)


async def atake(target: Target, count: int) -> dict[str, Any]:
    """take() for async code: a block from the in-process cache without leaving the event loop when it has one."""
    if target.kind == SEQUENCE:
        return block(target.name, await anext_values(target.name, count))
    return await sync_to_async(take, thread_sensitive=True)(target, count)


def handed_out(body: dict[str, Any]) -> tuple[int, str]:
    """How many numbers an answer holds, and the range or values for the log line."""
    if "first" in body:
        return body["count"], f"{body['first']}-{body['last']}"
    values = body.get("ids") or body.get("texts") or []
    shown = f"{values[0]}..{values[-1]}" if len(values) > 1 else str(values[0])
    return len(values), shown
