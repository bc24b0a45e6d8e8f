"""The WorkerLease table: which process holds which worker id of a Snowflake layout, and until when."""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils.translation import gettext_lazy as _

from django_segment_seq.db.columns import server_history_field
from django_segment_seq.snowflake.layouts import instant_of_ms as _instant


class WorkerLease(models.Model):
    """One worker id of one layout; free when `expires_ms` is past by the database's clock.

    Times are Unix milliseconds by the database server's clock, so every process judges expiry by
    the same clock whatever its own says.
    """

    layout = models.CharField(_("layout"), max_length=16)
    worker_id = models.PositiveIntegerField(_("worker id"))
    owner = models.CharField(_("owner"), max_length=255, blank=True, help_text=_("Host and process id of the holder."))
    token = models.CharField(_("token"), max_length=32, blank=True, editable=False)
    acquired_ms = models.BigIntegerField(_("acquired (ms)"), default=0)
    renewed_ms = models.BigIntegerField(_("renewed (ms)"), default=0)
    expires_ms = models.BigIntegerField(
        _("expires (ms)"), default=0, help_text=_("Unix milliseconds by the database's clock; 0 once released.")
    )
    time_ceiling_ms = models.BigIntegerField(
        _("time ceiling (ms)"),
        default=0,
        help_text=_("Ids made under this worker id carry times up to this; the next holder starts after it."),
    )
    version = models.BigIntegerField(_("version"), default=0)
    history = server_history_field(
        _("The database server history the row was last written on (see the Sequence table's).")
    )
    failover_ms = models.BigIntegerField(
        _("failover noticed (ms)"),
        default=0,
        db_default=0,
        editable=False,
        help_text=_(
            "When a write on this history first met rows of another one: for a lease time after it, a worker id "
            "a lost write may have given is not used."
        ),
    )

    class Meta:
        verbose_name = _("worker lease")
        verbose_name_plural = _("worker leases")
        ordering = ["layout", "worker_id"]
        constraints = [models.UniqueConstraint(fields=["layout", "worker_id"], name="segment_seq_lease_unique_worker")]

    def __str__(self) -> str:
        return f"{self.layout} worker {self.worker_id}"

    @property
    def acquired_at(self) -> datetime | None:
        return _instant(self.acquired_ms)

    @property
    def renewed_at(self) -> datetime | None:
        return _instant(self.renewed_ms)

    @property
    def expires_at(self) -> datetime | None:
        return _instant(self.expires_ms)
