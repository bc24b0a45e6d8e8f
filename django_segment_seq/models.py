"""The app's models as Django and migrations find them: the Sequence table, the concealed formats' keys,
Snowflake's worker leases, the register of voided numbers and the deployment's identity. The ID service's
clients are the service app's (django_segment_seq.service)."""

from django_segment_seq.audit.models import VoidedNumber
from django_segment_seq.db.columns import column_of, concrete_field
from django_segment_seq.db.concealed_formats import ConcealedFormat
from django_segment_seq.db.deployment import Deployment
from django_segment_seq.db.rownames import validate_sequence_name
from django_segment_seq.db.rule_shapes import RecordedShape
from django_segment_seq.db.table import CounterValueField, Sequence
from django_segment_seq.snowflake.models import WorkerLease

# Migrations name CounterValueField and validate_sequence_name by these paths.
__all__ = [
    "ConcealedFormat",
    "CounterValueField",
    "Deployment",
    "RecordedShape",
    "Sequence",
    "VoidedNumber",
    "WorkerLease",
    "column_of",
    "concrete_field",
    "validate_sequence_name",
]
