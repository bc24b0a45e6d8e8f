"""At migrate, the concealed formats of every installed model are recorded with the key they are made under."""

from __future__ import annotations

from typing import Any

from django.apps import apps

from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.flow import key_ledger


def concealed_formats() -> list[tuple[str, str]]:
    """(sequence name, format) of every field of an installed model that conceals its numbers."""
    found = []
    for model in apps.get_models():
        for field in model._meta.local_fields:
            if isinstance(field, SequenceFieldBase) and field.flow is not None and field.flow.concealment is not None:
                found.append((field.sequence_name, str(field.flow.source)))
    return found


def record_at_migrate(using: str, **kwargs: Any) -> None:
    """post_migrate receiver: a deploy with a changed key and unchanged formats stops here, before any number."""
    key_ledger.record(using, concealed_formats())
