"""The admin for the Sequence table: edit steps and limits; values only forward; no deletion."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from .models import Sequence


@admin.register(Sequence)
class SequenceAdmin(admin.ModelAdmin):
    list_display = ["name", "value", "step", "min_value", "max_value", "cycle", "modified"]
    list_filter = ["cycle"]
    search_fields = ["name"]
    readonly_fields = ["created", "modified"]
    fieldsets = [
        (None, {"fields": ["name", "value"]}),
        (_("Allocation"), {"fields": ["step", "min_value", "max_value", "cycle"]}),
        (_("History"), {"fields": ["created", "modified"]}),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Sequence | None = None) -> list[str]:
        # Renaming would detach every process's cache from its row and start the old name afresh.
        return [*self.readonly_fields, "name"] if obj is not None else list(self.readonly_fields)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A deleted row restarts at its minimum on next use, repeating every number handed out so far.
        return False
