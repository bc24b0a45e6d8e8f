"""A "Void selected" action for a project's own model admins: the selected rows' numbers go into the register through
void(), with one reason asked for on an intermediate page, as the admin's "Delete selected" asks to confirm."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from django_segment_seq.audit.exceptions import VoidError
from django_segment_seq.audit.models import VoidedNumber
from django_segment_seq.audit.void import void
from django_segment_seq.exceptions import SequenceError
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.fields.labels import label_of
from django_segment_seq.numbered import scope_fields

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

    _Mixin = ModelAdmin[Any]
else:
    _Mixin = object

# Refusals listed one by one after a void; the rest are counted.
SHOWN_REFUSALS = 10
ACTION = "void_selected"


class VoidReasonForm(forms.Form):
    """The one question the action asks: why the selected numbers were not used."""

    reason = forms.CharField(
        label=_("Reason"),
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text=_("Recorded with each number, with your user name and the time."),
    )


class VoidActionMixin(_Mixin):
    """Adds "Void selected …" to a ModelAdmin: put it before admin.ModelAdmin in the bases.

    `void_field` names the SequenceField whose numbers are voided; left None, the model's only one. The action
    is offered to users who may add voided numbers (django_segment_seq.add_voidednumber).
    """

    void_field: str | None = None

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict[str, Any]:
        # Django 6.1 passes where the actions are shown (ActionLocation, the change list or one object's form) and
        # warns about an override without it; earlier releases know no such argument. Each release packs the
        # action its own way through get_action(), which leaves it out where it does not belong.
        if action_location is None:
            actions: dict[str, Any] = super().get_actions(request)
            action = self.get_action(type(self).void_selected)
        else:
            actions = super().get_actions(request, action_location=action_location)  # type: ignore[call-arg,unused-ignore]
            action = self.get_action(type(self).void_selected, action_location)  # type: ignore[call-arg,unused-ignore]
        if action is not None and request.user.has_perm(
            f"{VoidedNumber._meta.app_label}.add_{VoidedNumber._meta.model_name}"
        ):
            actions[ACTION] = action
        return actions

    def voided_field(self) -> SequenceFieldBase:
        """The SequenceField the action voids; ImproperlyConfigured when it cannot be told."""
        found = [field for field in self.model._meta.local_fields if isinstance(field, SequenceFieldBase)]
        if self.void_field is not None:
            found = [field for field in found if field.name == self.void_field]
        if len(found) != 1:
            names = ", ".join(field.name for field in found) or "none"
            raise ImproperlyConfigured(
                f"{type(self).__name__}.void_field must name one SequenceField of {self.model._meta.label} "
                f"(found: {names})."
            )
        return found[0]

    @admin.action(description=_("Void selected %(verbose_name_plural)s"))
    def void_selected(self, request: HttpRequest, queryset: models.QuerySet[Any]) -> TemplateResponse | None:
        """Asks for the reason, then voids each selected row's number; refusals are listed, nothing else changes."""
        field = self.voided_field()
        form = VoidReasonForm(request.POST if request.POST.get("post") == "yes" else None)
        if form.is_bound and form.is_valid():
            self._void_all(request, queryset, field, form.cleaned_data["reason"])
            return None
        rows = [(row, getattr(row, field.attname)) for row in queryset]
        context = {
            **self.admin_site.each_context(request),
            "title": _("Void selected numbers"),
            "opts": self.model._meta,
            "field_label": label_of(self.model, field),
            "rows": rows,
            "form": form,
            "action": ACTION,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "media": self.media,
        }
        return TemplateResponse(request, "admin/django_segment_seq/void_selected.html", context)

    def _void_all(
        self, request: HttpRequest, rows: models.QuerySet[Any], field: SequenceFieldBase, reason: str
    ) -> None:
        label = label_of(self.model, field)
        user = request.user.get_username() if request.user.is_authenticated else ""
        scoped_by = scope_fields(self.model, field)
        voided, refused = 0, []
        for row in rows:
            value = getattr(row, field.attname)
            if value in (None, ""):
                refused.append(f"{row}: {_('no number yet')}")
                continue
            scope = {scope_field.attname: getattr(row, scope_field.attname) for scope_field in scoped_by} or None
            try:
                void(label, value, reason, scope=scope, user=user)
            except (VoidError, SequenceError, ValueError) as exc:
                refused.append(str(exc))  # names the label and the number itself
                continue
            voided += 1
        if voided:
            message = ngettext("%(count)d number voided.", "%(count)d numbers voided.", voided) % {"count": voided}
            self.message_user(request, message, messages.SUCCESS)
        for line in refused[:SHOWN_REFUSALS]:
            self.message_user(request, line, messages.ERROR)
        if len(refused) > SHOWN_REFUSALS:
            self.message_user(request, f"{len(refused) - SHOWN_REFUSALS} more refused.", messages.ERROR)
