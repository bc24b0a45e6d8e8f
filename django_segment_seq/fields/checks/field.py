"""The class that gives a sequence field its check(): each concern's checks, in the order Django reports them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core import checks

from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.fields.checks.disguise import check_digit_errors, conceal_errors
from django_segment_seq.fields.checks.formats import format_errors
from django_segment_seq.fields.checks.gapless import gapless_errors
from django_segment_seq.fields.checks.names import fields_of_same_sequence, sequence_name_errors
from django_segment_seq.fields.checks.resets import fiscal_year_start_errors, reset_errors, reset_on_errors
from django_segment_seq.fields.checks.scopes import scope_errors


class SequenceFieldChecks(SequenceFieldBase):
    """Every check of a sequence field; Django runs them through check() at `manage.py check` and test setup."""

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        return [
            *super().check(**kwargs),
            *sequence_name_errors(self),
            *format_errors(self),
            *reset_errors(self),
            *reset_on_errors(self),
            *fiscal_year_start_errors(self),
            *gapless_errors(self),
            *scope_errors(self),
            *check_digit_errors(self),
            *conceal_errors(self),
        ]

    def fields_of_same_sequence(self) -> Iterator[SequenceFieldBase]:
        """The other fields of installed models that take numbers from this field's sequence."""
        return fields_of_same_sequence(self)
