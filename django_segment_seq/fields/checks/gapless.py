"""The checks of `gapless`: a bool, the same in every field of the sequence, with the table in the model's database."""

from __future__ import annotations

from django.core import checks
from django.db import router

from django_segment_seq.db.routing import sequence_database
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.fields.checks.names import fields_of_same_sequence


def gapless_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """`gapless` is a bool, used alike by every field of the sequence, with the table in the model's database."""
    if not isinstance(field.gapless, bool):
        return [
            checks.Error(
                f"SequenceField gapless={field.gapless!r} must be True or False.",
                hint="Pass gapless=True for numbers without gaps, or leave it out.",
                obj=field,
                id="django_segment_seq.E017",
            )
        ]
    errors = shared_sequence_errors(field)
    if field.gapless:
        errors += gapless_database_errors(field)
    return errors


def gapless_database_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """The row lock must be taken in the transaction that saves the model, so both must share a database."""
    if not hasattr(field, "model"):
        return []
    model_alias, sequence_alias = router.db_for_write(field.model), sequence_database()
    if model_alias == sequence_alias:
        return []
    return [
        checks.Error(
            f"SequenceField gapless=True on {field.model._meta.label} cannot lock its number in the model's "
            f"transaction: the model is saved to database {model_alias!r}, the Sequence table is in "
            f"{sequence_alias!r}.",
            hint="Keep the Sequence table in the model's database (SEGMENT_SEQ['DATABASE'], routers), "
            "or drop gapless=True.",
            obj=field,
            id="django_segment_seq.E029",
        )
    ]


def shared_sequence_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """A gapless sequence also filled by a cached field would get gaps (and vice versa); refuse the mix."""
    if not hasattr(field, "model"):
        return []
    others = [other for other in fields_of_same_sequence(field) if other.gapless is not field.gapless]
    if not others:
        return []
    other = others[0]
    return [
        checks.Error(
            f"Sequence {field.sequence_name!r} is gapless in one field and cached in another "
            f"({other.model._meta.label}.{other.name}): cached ranges would leave gaps in the gapless numbers.",
            hint="Give every field of a gapless sequence gapless=True, or use different sequence names.",
            obj=field,
            id="django_segment_seq.E031",
        )
    ]
