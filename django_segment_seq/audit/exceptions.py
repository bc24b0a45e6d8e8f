"""Why a number could not be voided: each a ValueError, since the caller's input is what is wrong."""

from __future__ import annotations

from django_segment_seq.fields.labels import UnknownFieldLabel

__all__ = [
    "AlreadyVoided",
    "EmptyReason",
    "InvalidVoidOption",
    "NeverHandedOut",
    "OtherSeries",
    "UnknownField",
    "UnreadableNumber",
    "VoidError",
]


class VoidError(ValueError):
    """Base class of the register's errors; nothing was recorded."""


class UnknownField(VoidError, UnknownFieldLabel):
    """The label names no model field, or a field that is not a SequenceField (fields.labels' error, as the
    register raises it)."""


class EmptyReason(VoidError):
    """A void without a reason explains nothing, which is what the register is for."""


class UnreadableNumber(VoidError):
    """The text is not one the field's format makes (or the format cannot be read back), so it names no number."""


class AlreadyVoided(VoidError):
    """The number is in the register already; its first reason stands."""


class NeverHandedOut(VoidError):
    """The number is above every range the counter ever gave out and no row holds it, or below the sequence's
    minimum: there is nothing to void."""


class OtherSeries(VoidError):
    """The text shows another period or scope than the one given: voiding it there would void another number."""


class InvalidVoidOption(VoidError):
    """A `user` longer than the register keeps, or a `using` that names no database."""
