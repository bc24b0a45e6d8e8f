"""The sequence name a field takes its numbers from: a valid row name (E010), and the other fields that share it."""

from __future__ import annotations

from collections.abc import Iterator

from django.core import checks
from django.core.exceptions import ValidationError

from django_segment_seq.db.rownames import NAME_MAX_LENGTH, validate_sequence_name
from django_segment_seq.fields.base import SequenceFieldBase


def sequence_name_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """The name must be a valid Sequence row name, or the first save would be refused."""
    try:
        validate_sequence_name(field.sequence_name)
    except ValidationError as exc:
        return [
            checks.Error(
                f"SequenceField sequence_name {field.sequence_name!r} is invalid: {' '.join(exc.messages)}",
                hint=f"Pass a non-empty string of at most {NAME_MAX_LENGTH} characters as the first argument.",
                obj=field,
                id="django_segment_seq.E010",
            )
        ]
    return []


def fields_of_same_sequence(field: SequenceFieldBase) -> Iterator[SequenceFieldBase]:
    """The other fields of installed models that take numbers from `field`'s sequence."""
    if not hasattr(field, "model"):
        return
    for model in field.model._meta.apps.get_models():
        fields = [other for other in model._meta.local_fields if isinstance(other, SequenceFieldBase)]
        yield from (other for other in fields if other is not field and other.sequence_name == field.sequence_name)
