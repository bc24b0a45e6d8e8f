"""The VoidedNumber table: numbers of a series deliberately not used, each with why, when and by whom."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from django_segment_seq.db.rownames import KEY_MAX_LENGTH, NAME_MAX_LENGTH

# app_label.Model.field, within MariaDB's index key limit together with the other key columns.
LABEL_MAX_LENGTH = 200


class VoidedNumber(models.Model):
    """One number of one field's series (scope and period; '' for none) recorded as not used, with its reason.

    Written only by void(); the admin shows it read-only, since an edited reason would rewrite the record.
    """

    label = models.CharField(_("field"), max_length=LABEL_MAX_LENGTH, help_text=_("app_label.Model.field"))
    scope = models.CharField(_("scope"), max_length=NAME_MAX_LENGTH, blank=True, default="")
    period = models.CharField(_("period"), max_length=KEY_MAX_LENGTH, blank=True, default="")
    number = models.BigIntegerField(_("number"))
    text = models.CharField(
        _("text"), max_length=255, blank=True, default="", help_text=_("The formatted number, when one was given.")
    )
    reason = models.TextField(_("reason"))
    sequence = models.CharField(
        _("sequence row"), max_length=NAME_MAX_LENGTH, help_text=_("The Sequence row that counts this series.")
    )
    voided_at = models.DateTimeField(_("voided at"), default=timezone.now)
    voided_by = models.CharField(_("voided by"), max_length=150, blank=True, default="")

    class Meta:
        verbose_name = _("voided number")
        verbose_name_plural = _("voided numbers")
        ordering = ["label", "scope", "period", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["label", "scope", "period", "number"], name="segment_seq_voided_number_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.label} {self.text or self.number}"
