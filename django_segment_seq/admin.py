"""The admin for the Sequence table: edit steps and limits; values only forward; no deletion; periods with their sequence."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from .models import Sequence
from .snowflake.models import WorkerLease


class SequenceForm(forms.ModelForm):
    """Leaves `value` alone unless the admin changed it: the page may be older than ranges taken since."""

    class Meta:
        model = Sequence
        fields = "__all__"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "value" in self.fields:
            # The value shown travels back with the form, so "unchanged" is judged against the page, not the row.
            self.fields["value"].show_hidden_initial = True

    def clean_value(self) -> int | None:
        if self.instance.pk is not None and "value" not in self.changed_data:
            return self.instance.value  # as stored when this request loaded the row
        return self.cleaned_data.get("value")


class SequenceFilter(admin.SimpleListFilter):
    """Shows a sequence that restarts per period together with all its per-period rows."""

    title = _("sequence")
    parameter_name = "sequence"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        names = Sequence.objects.exclude(base_name=None).values_list("base_name", flat=True).distinct()
        return [(name, name) for name in sorted(set(names))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Sequence]) -> QuerySet[Sequence] | None:
        if self.value():
            return queryset.filter(Q(name=self.value()) | Q(base_name=self.value()))
        return queryset


@admin.register(Sequence)
class SequenceAdmin(admin.ModelAdmin):
    form = SequenceForm
    list_display = ["name", "period", "value", "step", "min_value", "max_value", "cycle", "modified"]
    list_filter = [SequenceFilter, "cycle"]
    search_fields = ["name"]
    readonly_fields = ["base_name", "period", "created", "modified"]
    # Each sequence, then its periods newest first.
    ordering = [Coalesce("base_name", "name").asc(), F("period").desc(nulls_first=True), "name"]
    fieldsets = [
        (None, {"fields": ["name", "value", "base_name", "period"]}),
        (_("Allocation"), {"fields": ["step", "min_value", "max_value", "cycle"]}),
        (_("History"), {"fields": ["created", "modified"]}),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Sequence | None = None) -> list[str]:
        # Renaming would detach every process's cache from its row and start the old name afresh.
        return [*self.readonly_fields, "name"] if obj is not None else list(self.readonly_fields)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A deleted row restarts at its minimum on next use, repeating every number handed out so far.
        return False

    def save_model(self, request: HttpRequest, obj: Sequence, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and obj.base_name is None and Sequence.objects.filter(base_name=obj.name).exists():
            messages.info(
                request,
                _(
                    "Periods of %(name)s created from now on take this step and these limits; "
                    "existing period rows keep their own (edit them one by one)."
                )
                % {"name": obj.name},
            )


@admin.register(WorkerLease)
class WorkerLeaseAdmin(admin.ModelAdmin):
    """Read-only: leases are taken, renewed and released by the processes; an edit could hand one worker id to two."""

    list_display = ["layout", "worker_id", "owner", "is_live", "acquired_at", "renewed_at", "expires_at"]
    list_filter = ["layout"]
    search_fields = ["owner"]
    ordering = ["layout", "worker_id"]

    @admin.display(boolean=True, description=_("live (by this server's clock)"))
    def is_live(self, obj: WorkerLease) -> bool:
        from django.utils import timezone

        return obj.expires_at is not None and obj.expires_at > timezone.now()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
