"""The shape each sequence name was first used with (format, reset, scope), so a rule changed between deploys is
noticed before its counters start again and repeat texts already issued."""

from __future__ import annotations

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.translation import gettext_lazy as _

from django_segment_seq.db.rownames import NAME_MAX_LENGTH


class RecordedShape(models.Model):
    """The rows and texts of one sequence name: its format, its reset and the fields it is scoped by."""

    sequence_name = models.CharField(_("sequence name"), max_length=NAME_MAX_LENGTH, unique=True)
    format = models.TextField(_("format"), blank=True)
    reset = models.CharField(_("reset"), max_length=200, blank=True)
    scope = models.CharField(_("scope"), max_length=NAME_MAX_LENGTH, blank=True)
    recorded = models.DateTimeField(_("recorded"), auto_now_add=True)

    class Meta:
        app_label = "django_segment_seq"
        verbose_name = _("recorded shape")
        verbose_name_plural = _("recorded shapes")

    def __str__(self) -> str:
        return self.sequence_name


def select_shape(connection: BaseDatabaseWrapper) -> str:
    """The recorded reset and scope of a sequence name, quoted the connection's way."""
    quote = connection.ops.quote_name
    return (
        f"SELECT {quote('reset')}, {quote('scope')}, {quote('format')} FROM {quote(RecordedShape._meta.db_table)} "
        f"WHERE {quote('sequence_name')} = %s"
    )


def insert_if_missing_sqlite(connection: BaseDatabaseWrapper) -> str:
    """A sequence name's first shape on SQLite, left as it is when one is recorded already."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(name) for name in ("sequence_name", "format", "reset", "scope", "recorded"))
    return f"INSERT OR IGNORE INTO {quote(RecordedShape._meta.db_table)} ({columns}) VALUES (%s, %s, %s, %s, %s)"
