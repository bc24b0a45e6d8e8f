"""A model's own plain Manager becomes a SequenceManager, so its bulk_create takes one allocation per sequence.

Django's bulk_create asks a field for one number per object; only a manager sees the whole list. A
model that declares no manager (Django adds `objects = models.Manager()`) or declares a plain
`models.Manager()` itself gets that manager's class switched to SequenceManager when the model is
prepared. SequenceManager subclasses Manager and adds no state, so the instance keeps its name,
model, creation order and `auto_created` flag, and migrations still see a plain manager. Managers
of other classes, and plain ones inherited from an abstract base (an instance its siblings share),
and plain ones with use_in_migrations are left alone: their bulk_create numbers objects one by one
in pre_save, as before.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models.signals import class_prepared
from django.dispatch import receiver

from django_segment_seq.fields.bulk import SequenceManager, sequence_fields


@receiver(class_prepared)
def number_bulk_create_in_one_allocation(sender: type[models.Model], **kwargs: Any) -> None:
    """Switch the model's own plain managers to SequenceManager when it has fields fill_sequences numbers."""
    if not sequence_fields(sender):
        return
    switched = set()
    for manager in sender._meta.local_managers:
        # One that migrations keep would change class in them; leave it, and its bulk_create, as it is.
        if type(manager) is models.Manager and not manager.use_in_migrations:
            manager.__class__ = SequenceManager
            switched.add(manager.name)
    # Options.managers holds copies of the local managers, perhaps made already; later copies follow the switch.
    for manager in sender._meta.managers:
        if type(manager) is models.Manager and manager.name in switched:
            manager.__class__ = SequenceManager
