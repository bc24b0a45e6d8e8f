"""Model fields filled from a sequence at save time, their system checks, and bulk numbering.

`django_segment_seq.fields.SequenceField` is the path users' migrations hold, so the field classes are named here.
"""

from django_segment_seq.fields.sequence import FormattedSequenceField, SequenceField, filled_at_save

__all__ = ["FormattedSequenceField", "SequenceField", "filled_at_save"]
