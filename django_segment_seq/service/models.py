"""The callers of the ID service: one row per client, with the digest of its token, its scope, limits and usage."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from django_segment_seq.conf import app_settings
from django_segment_seq.service.tokens import parse_rate


def validate_rate(value: str) -> None:
    try:
        parse_rate(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


class Client(models.Model):
    """A service allowed to take numbers; its token is shown once and only its digest is kept."""

    name = models.CharField(_("name"), max_length=100, unique=True)
    token_start = models.CharField(
        _("token"), max_length=20, editable=False, help_text=_("The start of the token, to tell tokens apart.")
    )
    token_digest = models.CharField(_("token digest"), max_length=64, unique=True, editable=False)
    previous_digest = models.CharField(_("previous token digest"), max_length=64, blank=True, default="", db_index=True)
    previous_valid_until = models.DateTimeField(
        _("previous token valid until"), null=True, blank=True, help_text=_("After a rotation, the grace period's end.")
    )
    sequences = models.TextField(
        _("sequences"),
        help_text=_(
            'Shell-style patterns of what the client may take, separated by commas: sequence names ("order*"), '
            'field labels ("shop.Order.number") or Snowflake layouts ("snowflake:classic").'
        ),
    )
    max_count = models.PositiveIntegerField(_("largest count"), default=1000)
    rate = models.CharField(
        _("rate"),
        max_length=20,
        blank=True,
        default="",
        validators=[validate_rate],
        help_text=_("Requests per window, e.g. 50/s or 1000/m; empty for no limit."),
    )
    max_new_rows = models.PositiveIntegerField(
        _("rows it may create"),
        default=0,
        help_text=_(
            "How many new sequences the client may create by naming them; 0 (the default): only sequences that "
            "exist or a field declares."
        ),
    )
    rows_created = models.PositiveIntegerField(_("rows created"), default=0, editable=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last use"), null=True, blank=True, editable=False)
    requests = models.BigIntegerField(_("requests served"), default=0, editable=False)
    numbers = models.BigIntegerField(_("numbers handed out"), default=0, editable=False)

    class Meta:
        app_label = "segment_seq_service"
        # The name the core app's migration 0009 gave the table, kept so that moving the model moved no row.
        db_table = "django_segment_seq_client"
        verbose_name = _("ID service client")
        verbose_name_plural = _("ID service clients")
        ordering = ["name"]
        permissions = [("use_id_service", _("Can take numbers from the ID service with a login session"))]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """A largest count within SERVICE_MAX_COUNT, the maximum the OpenAPI document gives generated clients."""
        most = app_settings()["SERVICE_MAX_COUNT"]
        if self.max_count is not None and self.max_count > most:
            raise ValidationError(
                {"max_count": _("At most %(most)d (SEGMENT_SEQ['SERVICE_MAX_COUNT']).") % {"most": most}}
            )


class RateWindow(models.Model):
    """Requests counted in one window of a rate (a client's, or an address's failed authentications), kept in the
    database when the cache is one that culls its keys past MAX_ENTRIES (Django's database and file caches)."""

    key = models.CharField(_("window"), max_length=200, unique=True)
    count = models.PositiveIntegerField(_("requests"), default=0)
    ends_at = models.FloatField(_("ends at"), help_text=_("When the window ends, in seconds since the epoch."))

    class Meta:
        app_label = "segment_seq_service"
        verbose_name = _("ID service rate window")
        verbose_name_plural = _("ID service rate windows")

    def __str__(self) -> str:
        return self.key
