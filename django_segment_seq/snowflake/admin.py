"""The admin for Snowflake worker leases: read-only, since only the processes may take, renew or release one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from django_segment_seq.snowflake.models import WorkerLease

if TYPE_CHECKING:
    _WorkerLeaseAdminBase = admin.ModelAdmin[WorkerLease]
else:
    _WorkerLeaseAdminBase = admin.ModelAdmin


@admin.register(WorkerLease)
class WorkerLeaseAdmin(_WorkerLeaseAdminBase):
    """Read-only: leases are taken, renewed and released by the processes; an edit could hand one worker id to two."""

    list_display = ["layout", "worker_id", "owner", "is_live", "acquired_at", "renewed_at", "expires_at"]
    list_filter = ["layout"]
    search_fields = ["owner"]
    ordering = ["layout", "worker_id"]

    @admin.display(boolean=True, description=_("live (by this server's clock)"))
    def is_live(self, obj: WorkerLease) -> bool:
        return obj.expires_at is not None and obj.expires_at > timezone.now()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
