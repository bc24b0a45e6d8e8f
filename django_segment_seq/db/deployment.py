"""This deployment's identity, minted once at random and kept in its own database: the Redis tier names a row's
keys after it, so two deployments sharing one Redis never take each other's super-segments, whatever their
servers are called."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Deployment(models.Model):
    """One row: the identity, and the fingerprint of the database server it was minted on (to notice a copy)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    identity = models.CharField(_("identity"), max_length=32, editable=False)
    origin = models.CharField(
        _("origin"),
        max_length=64,
        editable=False,
        help_text=_("A digest of the database server and table the identity was minted on."),
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        app_label = "django_segment_seq"
        verbose_name = _("deployment")
        verbose_name_plural = _("deployments")

    def __str__(self) -> str:
        return self.identity
