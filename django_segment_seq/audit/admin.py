"""The admin for the register of voided numbers: read-only, since a record is made only by void(); its add form
calls void() with the signed-in user as voided_by. Newest first; VoidActionMixin voids from a project's own admins."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.contrib import admin
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _

from django_segment_seq.audit.exceptions import UnreadableNumber, VoidError
from django_segment_seq.audit.models import VoidedNumber
from django_segment_seq.audit.void import void
from django_segment_seq.db.rownames import shown
from django_segment_seq.db.table import Sequence
from django_segment_seq.exceptions import SequenceScopeError
from django_segment_seq.fields.labels import sequence_field_labels

if TYPE_CHECKING:
    _VoidFormBase = forms.ModelForm[VoidedNumber]
    _VoidedNumberAdminBase = admin.ModelAdmin[VoidedNumber]
else:
    _VoidFormBase = forms.ModelForm
    _VoidedNumberAdminBase = admin.ModelAdmin


class VoidForm(_VoidFormBase):
    """Voids a number through void(), so the admin refuses exactly what the function refuses."""

    number_or_text = forms.CharField(
        label=_("Number or text"),
        help_text=_(
            "A formatted field's text as it was shown (INV-2026-00042), or the bare number (42); a bare number of "
            "a field with reset is of the period below, by default the current one."
        ),
    )

    class Meta:
        model = VoidedNumber
        fields = ["label", "scope", "period", "reason"]
        help_texts = {
            "scope": _("For a scoped field: the scope as the sequence list shows it in its row name (company=42)."),
            "period": _("For a bare number of a field with reset: its period (2026, 2026-11); a text shows its own."),
        }

    user = ""  # set by the admin before validation: the voided_by of the record

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        labels = [(label, label) for label in sequence_field_labels()]  # the models installed now
        self.fields["label"] = forms.ChoiceField(
            label=_("Field"), choices=[("", "---------"), *labels], help_text=_("app_label.Model.field")
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        given = data["number_or_text"].strip()
        try:
            try:
                self.record = self._void(data, given)
            except UnreadableNumber:
                if not BARE_NUMBER.fullmatch(given):
                    raise
                self.record = self._void(data, int(given))  # not a text the format makes: the bare number
        except (VoidError, SequenceScopeError, ValueError) as exc:
            raise forms.ValidationError(str(exc)) from None
        return data

    def _void(self, data: dict[str, Any], given: int | str) -> VoidedNumber:
        return void(
            data["label"],
            given,
            data["reason"],
            scope=data.get("scope") or None,
            period=data.get("period") or None,
            user=self.user,
        )


# A reason is cut to this many characters in the list; its page shows it whole.
REASON_SHOWN = 80
# What the add form takes as a bare number when it is not a text the field's format makes.
BARE_NUMBER = re.compile(r"-?[0-9]+")

# What a record's page shows, all read-only; the add form asks for what void() takes instead.
SHOWN = ["label", "scope", "period", "number", "text", "reason", "voided_at", "voided_by", "row"]
ASKED = ["label", "number_or_text", "scope", "period", "reason"]


@admin.register(VoidedNumber)
class VoidedNumberAdmin(_VoidedNumberAdminBase):
    """Lists the register; records cannot be changed or deleted, since the register is what an audit relies on."""

    form = VoidForm
    # The field with its series' Sequence row (scope and period in one name) beneath: the list fits 1400 pixels.
    list_display = ["voided_when", "field_and_row", "shown_number", "reason_shown", "voided_by"]
    list_display_links = ["voided_when"]
    list_filter = ["voided_at", "label", "period", "voided_by"]
    search_fields = ["label", "text", "reason", "voided_by", "=number"]
    ordering = ["-voided_at", "-pk"]

    def get_fields(self, request: HttpRequest, obj: VoidedNumber | None = None) -> list[str]:  # type: ignore[override]
        return list(ASKED if obj is None else SHOWN)

    def get_readonly_fields(self, request: HttpRequest, obj: VoidedNumber | None = None) -> list[str]:
        return [] if obj is None else list(SHOWN)

    def get_form(
        self, request: HttpRequest, obj: VoidedNumber | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = cast("type[VoidForm]", super().get_form(request, obj, change, **kwargs))
        form.user = request.user.get_username() if request.user.is_authenticated else ""
        return form

    def save_model(self, request: HttpRequest, obj: VoidedNumber, form: Any, change: bool) -> None:
        # void() wrote the record while the form was validated; the admin logs and links that one.
        record = form.record
        obj.pk, obj.number, obj.text, obj.voided_at = record.pk, record.number, record.text, record.voided_at
        obj._state.adding = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[VoidedNumber]:
        # Each record's Sequence row in the same query, for the link (the two tables share a database).
        rows = Sequence._base_manager.filter(name=OuterRef("sequence")).values("pk")[:1]
        return super().get_queryset(request).annotate(sequence_pk=Subquery(rows))

    @admin.display(description=_("scope"), ordering="scope")
    def scope_shown(self, obj: VoidedNumber) -> str:
        return shown(obj.scope)

    @admin.display(description=_("number"), ordering="number")
    def shown_number(self, obj: VoidedNumber) -> str:
        """The text as it was shown, or the bare number: one column, so the list fits a laptop's width."""
        return obj.text or str(obj.number)

    @admin.display(description=_("reason"))
    def reason_shown(self, obj: VoidedNumber) -> SafeString:
        """Cut to REASON_SHOWN characters, and kept wide enough to read when the other columns are long."""
        return format_html('<span class="voided-reason">{}</span>', Truncator(obj.reason).chars(REASON_SHOWN))

    @admin.display(description=_("voided at"), ordering="voided_at")
    def voided_when(self, obj: VoidedNumber) -> str:
        """Day and minute in the current time zone, sortable by eye and short enough for one line."""
        return timezone.localtime(obj.voided_at).strftime("%Y-%m-%d %H:%M")

    @admin.display(description=_("field and sequence row"), ordering="label")
    def field_and_row(self, obj: VoidedNumber) -> SafeString:
        """The field's label (breakable at its dots) over the series' Sequence row, linked."""
        parts = obj.label.split(".")
        label = format_html_join(mark_safe(".<wbr>"), "{}", ((part,) for part in parts))
        return format_html('{}<br><span class="quiet">{}</span>', label, self.row(obj))

    @admin.display(description=_("sequence row"))
    def row(self, obj: VoidedNumber) -> SafeString | str:
        """The Sequence row that counts the series, linked to its own page."""
        pk = getattr(obj, "sequence_pk", None)
        if pk is None:
            return obj.sequence
        url = reverse(f"{self.admin_site.name}:django_segment_seq_sequence_change", args=[pk])
        return format_html('<a href="{}">{}</a>', url, obj.sequence)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
