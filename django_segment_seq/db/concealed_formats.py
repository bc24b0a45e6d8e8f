"""The keys concealed formats were made under, one row per sequence and format, so a changed key is noticed."""

from __future__ import annotations

import hashlib

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.translation import gettext_lazy as _

from django_segment_seq.db.rownames import NAME_MAX_LENGTH


def format_digest(format: str) -> str:
    """A fixed-length stand-in for a format in the unique key (a long text column cannot be in one on MySQL)."""
    return hashlib.sha256(format.encode()).hexdigest()


def select_key_id(connection: BaseDatabaseWrapper) -> str:
    """The key fingerprint recorded for (sequence name, format digest), quoted the connection's way."""
    quote = connection.ops.quote_name
    return (
        f"SELECT {quote('key_id')} FROM {quote(ConcealedFormat._meta.db_table)} "
        f"WHERE {quote('sequence_name')} = %s AND {quote('format_digest')} = %s"
    )


def select_formats(connection: BaseDatabaseWrapper) -> str:
    """Every format recorded for a sequence name, with its key fingerprint, oldest first."""
    quote = connection.ops.quote_name
    return (
        f"SELECT {quote('format')}, {quote('key_id')} FROM {quote(ConcealedFormat._meta.db_table)} "
        f"WHERE {quote('sequence_name')} = %s ORDER BY {quote('recorded')}, {quote('id')}"
    )


class ConcealedFormat(models.Model):
    """A concealed format of a sequence and the fingerprint of the key its texts were made under."""

    sequence_name = models.CharField(_("sequence name"), max_length=NAME_MAX_LENGTH)
    format = models.TextField(_("format"))
    format_digest = models.CharField(_("format digest"), max_length=64, editable=False)
    key_id = models.CharField(_("key fingerprint"), max_length=16)
    recorded = models.DateTimeField(_("recorded"), auto_now_add=True)

    class Meta:
        app_label = "django_segment_seq"
        verbose_name = _("concealed format")
        verbose_name_plural = _("concealed formats")
        constraints = [
            models.UniqueConstraint(fields=["sequence_name", "format_digest"], name="segment_seq_concealed_format_once")
        ]

    def __str__(self) -> str:
        return f"{self.sequence_name}: {self.format}"
