"""At migrate, the concealed formats of every installed model are recorded with the key they are made under."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from django_segment_seq.exceptions import ConcealKeyChanged
from django_segment_seq.fields.labels import sequence_fields
from django_segment_seq.flow import key_ledger


def concealed_formats() -> list[tuple[str, str]]:
    """(sequence name, format) of every field of an installed model that conceals its numbers."""
    return [
        (field.sequence_name, str(field.flow.source))
        for _model, field in sequence_fields()
        if field.flow is not None and field.flow.concealment is not None
    ]


def record_at_migrate(using: str, **kwargs: Any) -> None:
    """post_migrate receiver: a deploy with a changed key and unchanged formats stops here, before any number."""
    try:
        key_ledger.record(using, concealed_formats())
    except ConcealKeyChanged as exc:
        raise ConcealKeyChangedAtMigrate(exc) from None


class ConcealKeyChangedAtMigrate(ConcealKeyChanged, CommandError):
    """ConcealKeyChanged as `migrate` raises it: also a CommandError, so manage.py prints its message and exits 1
    instead of a traceback, and a caller of call_command("migrate") still catches ConcealKeyChanged."""

    def __init__(self, refused: ConcealKeyChanged) -> None:
        Exception.__init__(self, *refused.args)
        self.__dict__.update(vars(refused))  # name, format and whatever else the refusal carries
        self.returncode = 1
