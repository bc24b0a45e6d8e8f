"""The admin for the Sequence table: edit steps and limits; values only forward; no deletion."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from .models import Sequence


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


@admin.register(Sequence)
class SequenceAdmin(admin.ModelAdmin):
    form = SequenceForm
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
