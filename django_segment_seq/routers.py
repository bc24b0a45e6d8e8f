"""A database router that keeps the Sequence table in the database SEGMENT_SEQ['DATABASE'] names.

On SQLite this is how allocation stays independent of the caller's transactions: the Sequence
table in its own file has its own write lock.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model

from django_segment_seq.conf import app_settings

APP_LABEL = "django_segment_seq"
# The ID service app's label: its client table stays beside the Sequence table, where the core app made it.
SERVICE_APP_LABEL = "segment_seq_service"
APP_LABELS = frozenset({APP_LABEL, SERVICE_APP_LABEL})


class SequenceRouter:
    """Routes django_segment_seq's models and the ID service app's to SEGMENT_SEQ['DATABASE'] and leaves every other
    decision to others."""

    def _alias(self, app_label: str) -> str | None:
        return app_settings()["DATABASE"] if app_label in APP_LABELS else None

    def db_for_read(self, model: type[Model], **hints: Any) -> str | None:
        return self._alias(model._meta.app_label)

    def db_for_write(self, model: type[Model], **hints: Any) -> str | None:
        return self._alias(model._meta.app_label)

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool | None:
        alias = self._alias(app_label)
        return None if alias is None else db == alias
