"""The admin for the Sequence table: edit steps and limits; values only forward; no deletion; scope and period rows
with their sequence.

Each row also shows how much of it is handed out and, for a row with a maximum, when it runs out.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timeuntil
from django.utils.translation import gettext_lazy as _

from django_segment_seq.audit import admin as audit_admin  # noqa: F401 - registers VoidedNumberAdmin too
from django_segment_seq.db.columns import BIGINT_MAX
from django_segment_seq.db.rownames import scope_of, scoped_rows, shown
from django_segment_seq.db.table import Sequence
from django_segment_seq.observe.usage import HORIZON, NO_LIMIT, has_limit, usage
from django_segment_seq.redistier import state as redis_state
from django_segment_seq.redistier.config import tier_config
from django_segment_seq.snowflake import admin as snowflake_admin  # noqa: F401 - registers WorkerLeaseAdmin too

if TYPE_CHECKING:
    from collections.abc import Callable

    from django_stubs_ext import FieldOpts, StrOrPromise

    _SequenceFormBase = forms.ModelForm[Sequence]
    _SequenceAdminBase = admin.ModelAdmin[Sequence]
else:
    _SequenceFormBase = forms.ModelForm
    _SequenceAdminBase = admin.ModelAdmin


class NoLimitField(forms.IntegerField):
    """The maximum, shown empty (meaning "no limit") instead of 9223372036854775807 when it is the column's default."""

    def prepare_value(self, value: Any) -> Any:
        return "" if value in (BIGINT_MAX, str(BIGINT_MAX)) else super().prepare_value(value)

    def to_python(self, value: Any) -> int | None:
        number = super().to_python(value)
        return BIGINT_MAX if number is None else number


class SequenceForm(_SequenceFormBase):
    """Leaves `value` alone unless the admin changed it: the page may be older than ranges taken since."""

    class Meta:
        model = Sequence
        # The editable columns; the admin's fieldsets then choose among them per page.
        fields = ["name", "value", "step", "min_value", "max_value", "cycle"]
        field_classes = {"max_value": NoLimitField}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "value" in self.fields:
            # The value shown travels back with the form, so "unchanged" is judged against the page, not the row.
            self.fields["value"].show_hidden_initial = True
        if "max_value" in self.fields:
            maximum = self.fields["max_value"]
            maximum.required = False
            maximum.widget.attrs["placeholder"] = NO_LIMIT
            maximum.help_text = _("Leave empty for no limit.")

    def clean_value(self) -> int | None:
        if self.instance.pk is not None and "value" not in self.changed_data:
            return self.instance.value  # as stored when this request loaded the row
        return self.cleaned_data.get("value")


class SequenceFilter(admin.SimpleListFilter):
    """Shows a sequence that is scoped or restarts per period together with all its per-scope and per-period rows."""

    title = _("sequence")
    parameter_name = "sequence"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        names = Sequence.objects.exclude(base_name=None).values_list("base_name", flat=True).distinct()
        return [(name, name) for name in sorted({name for name in names if name is not None})]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Sequence]) -> QuerySet[Sequence] | None:
        if self.value():
            return queryset.filter(Q(name=self.value()) | Q(base_name=self.value()))
        return queryset


@admin.register(Sequence)
class SequenceAdmin(_SequenceAdminBase):
    form = SequenceForm
    # Narrow enough for a 1280-pixel window beside the filters (the list's template leaves out the navigation
    # sidebar): the value with its share of the limits beneath (the count used is on the row's page), the limits in
    # one column with what is left of them, the last change on two short lines, "runs out" wrapped.
    list_display = [
        "name",
        "scope_shown",
        "period_shown",
        "value_shown",
        "step",
        "limits",
        "runs_out",
        "cycle",
        "modified_shown",
    ]
    list_filter = [SequenceFilter, "cycle"]
    search_fields = ["name"]
    readonly_fields = [
        "base_sequence",
        "scope_shown",
        "period",
        "used",
        "left",
        "runs_out",
        "created",
        "modified",
        "history",
        "redis_held",
    ]
    actions = ["drop_redis_state"]
    # Each sequence, then its periods newest first (scope rows of one period by name).
    ordering = [Coalesce("base_name", "name").asc(), F("period").desc(nulls_first=True), "name"]
    fieldsets = [
        (None, {"fields": ["name", "value", "base_sequence", "scope_shown", "period"]}),
        (_("Allocation"), {"fields": ["step", "min_value", "max_value", "cycle"]}),
        (_("Use"), {"fields": ["used", "left", "runs_out"]}),
        (_("History"), {"fields": ["created", "modified", "history"]}),
        (_("Redis"), {"fields": ["redis_held"]}),
    ]

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Sequence | None:
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            # The change form writes what was submitted onto obj; the use figures describe the row as loaded.
            obj._as_loaded = copy.copy(obj)
        return obj

    def has_redis_tier_permission(self, request: HttpRequest) -> bool:
        """Dropping Redis state means nothing without the Redis tier: the list then has no action (and no
        checkboxes). Asked through the action's permissions, the one way every supported Django filters actions."""
        return tier_config() is not None and self.has_change_permission(request)

    def get_list_display(self, request: HttpRequest) -> list[str | Callable[[Sequence], str | bool]]:
        # The period and scope columns stay out until some sequence restarts per period or is scoped.
        derived = Sequence.objects.exclude(base_name=None)
        hidden: set[str] = set()
        if not derived.exists():
            hidden |= {"scope_shown", "period_shown"}
        elif not derived.filter(scoped_rows()).exists():
            hidden.add("scope_shown")
        return [name for name in self.list_display if name not in hidden]

    def get_fieldsets(
        self, request: HttpRequest, obj: Sequence | None = None
    ) -> list[tuple[StrOrPromise | None, FieldOpts]]:
        # Period and scope fields mean something on derived rows only; use figures need a stored row.
        hidden = set() if obj is not None and obj.base_name is not None else {"base_sequence", "period"}
        if obj is None or scope_of(obj.name, obj.base_name, obj.period) is None:
            hidden.add("scope_shown")
        elif obj.period is None:
            hidden.add("period")
        if obj is None:
            hidden |= {"used", "left", "runs_out", "created", "modified", "history"}
        if obj is None or not redis_state.on_tier(obj.name):
            hidden.add("redis_held")
        shown: list[tuple[StrOrPromise | None, FieldOpts]] = []
        for title, options in super().get_fieldsets(request, obj):
            fields = [field for field in options["fields"] if field not in hidden]
            if fields:
                shown.append((title, {**options, "fields": fields}))
        return shown

    @admin.display(description=_("base sequence"))
    def base_sequence(self, obj: Sequence) -> SafeString | str:
        """The sequence a per-period row belongs to, linked to its own page."""
        rows = Sequence._base_manager.using(obj._state.db)
        base = rows.filter(name=obj.base_name).values_list("pk", flat=True).first()
        if base is None:
            return obj.base_name or ""
        url = reverse(f"{self.admin_site.name}:django_segment_seq_sequence_change", args=[base])
        return format_html('<a href="{}">{}</a>', url, obj.base_name)

    @admin.display(description=_("period"), ordering="period", empty_value="")
    def period_shown(self, obj: Sequence) -> str | None:
        return obj.period

    @admin.display(description=_("scope"), empty_value="")
    def scope_shown(self, obj: Sequence) -> str:
        """The scope values of a per-scope row, decoded from its name ("company=42")."""
        return shown(scope_of(obj.name, obj.base_name, obj.period))

    @admin.display(description=_("maximum"), ordering="max_value")
    def max_value_shown(self, obj: Sequence) -> Any:
        return obj.max_value if has_limit(obj) else NO_LIMIT

    @admin.display(description=_("limits"), ordering="max_value")
    def limits(self, obj: Sequence) -> SafeString:
        """Minimum to maximum ("1 &ndash; no limit"), and with a maximum the numbers left under it."""
        span = format_html(
            "{} &ndash; {}",
            number_format(obj.min_value, force_grouping=True),
            number_format(obj.max_value, force_grouping=True) if has_limit(obj) else NO_LIMIT,
        )
        left = usage(as_loaded(obj)).left
        if left is None:
            return format_html('<span style="white-space: nowrap;">{}</span>', span)
        return two_lines(span, _("%(left)s left") % {"left": number_format(left, force_grouping=True)})

    @admin.display(description=_("modified"), ordering="modified")
    def modified_shown(self, obj: Sequence) -> SafeString:
        """The last range taken or edit, as a date over a time in the current time zone (2026-11-30 / 14:05)."""
        when = timezone.localtime(obj.modified) if timezone.is_aware(obj.modified) else obj.modified  # USE_TZ off
        return two_lines(when.strftime("%Y-%m-%d"), when.strftime("%H:%M"))

    @admin.display(description=_("value"), ordering="value")
    def value_shown(self, obj: Sequence) -> SafeString:
        """The row's value and, with a maximum, the share of the numbers from minimum to maximum handed out."""
        value = number_format(obj.value, force_grouping=True)
        share = usage(as_loaded(obj)).share
        if share is None:
            return format_html('<span style="white-space: nowrap;">{}</span>', value)
        return two_lines(value, share_bar(share))

    @admin.display(description=_("used"))
    def used(self, obj: Sequence) -> SafeString:
        """Numbers handed out, and with a maximum their share of all numbers from minimum to maximum."""
        figures = usage(as_loaded(obj))
        count = number_format(figures.handed_out, force_grouping=True)
        if figures.share is None:
            return format_html('<span style="white-space: nowrap;">{}</span>', count)
        return two_lines(count, share_bar(figures.share))

    @admin.display(description=_("left"))
    def left(self, obj: Sequence) -> StrOrPromise:
        left = usage(as_loaded(obj)).left
        return NO_LIMIT if left is None else number_format(left, force_grouping=True)

    @admin.display(description=_("runs out"))
    def runs_out(self, obj: Sequence) -> SafeString | StrOrPromise:
        figures = usage(as_loaded(obj))
        if figures.left is None:
            return NO_LIMIT
        if figures.left == 0:
            return _("wraps on its next range") if obj.cycle else _("ran out")
        if figures.runs_out_in is None:
            if figures.handed_out == 0:
                return two_lines(_("never"), _("nothing handed out yet"), wrap=True)
            return two_lines(_("too early to tell"), _("under a minute of history"), wrap=True)
        when: StrOrPromise
        if figures.runs_out_in >= HORIZON:
            when = _("in over 100 years")
        else:
            now = timezone.now()
            until = timeuntil(now + figures.runs_out_in, now, depth=2)
            when = (_("wraps in %(time)s") if obj.cycle else _("in %(time)s")) % {"time": until}
        return two_lines(when, _("at its average of %(pace)s") % {"pace": pace_text(figures.pace)}, wrap=True)

    @admin.display(description=_("held in Redis"))
    def redis_held(self, obj: Sequence) -> StrOrPromise | SafeString:
        """The super-segment the Redis tier hands out for this row, and what is left of it."""
        try:
            held = redis_state.held(obj._state.db or "default", obj.name)
        except Exception as exc:  # noqa: BLE001 - Redis down or refusing: said on the page, never a 500
            return _("Redis could not be asked: %(error)s") % {"error": exc}
        if held is None:
            return _("nothing: the next block reserves a super-segment from this row")
        main = _("%(first)s to %(last)s, %(left)s left") % {
            "first": number_format(held.first, force_grouping=True),
            "last": number_format(held.last, force_grouping=True),
            "left": number_format(held.left, force_grouping=True),
        }
        if not held.valid:
            return two_lines(main, _("installed by another server process: never used, dropped on the next take"))
        if held.pending is None:
            return two_lines(main, _("no next super-segment yet"))
        return two_lines(main, _("next: %(first)s to %(last)s") % {"first": held.pending[0], "last": held.pending[1]})

    @admin.action(description=_("Drop the Redis state (its unused numbers become a gap)"), permissions=["redis_tier"])
    def drop_redis_state(self, request: HttpRequest, queryset: QuerySet[Sequence]) -> None:
        dropped = 0
        for row in queryset:
            if redis_state.on_tier(row.name):
                try:
                    dropped += redis_state.drop(row._state.db or "default", row.name)
                except Exception as exc:  # noqa: BLE001 - Redis down: said to the user
                    self.message_user(
                        request, _("Redis could not be asked: %(error)s") % {"error": exc}, messages.ERROR
                    )
                    return
        self.message_user(request, _("Dropped the Redis state of %(count)d rows.") % {"count": dropped})

    def get_readonly_fields(self, request: HttpRequest, obj: Sequence | None = None) -> list[str]:
        # Renaming would detach every process's cache from its row and start the old name afresh.
        return [*self.readonly_fields, "name"] if obj is not None else list(self.readonly_fields)

    def changeform_view(
        self, request: HttpRequest, object_id: str | None = None, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        # The form was valid against the row as loaded; the save's conditional UPDATE judges the row as
        # it is now (processes took ranges meanwhile). Its refusal rolls the whole save back.
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ValidationError as exc:
            for message in exc.messages:
                self.message_user(request, message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A deleted row restarts at its minimum on next use, repeating every number handed out so far.
        return False

    def save_model(self, request: HttpRequest, obj: Sequence, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and obj.base_name is None and Sequence.objects.filter(base_name=obj.name).exists():
            messages.info(
                request,
                _(
                    "Periods and scopes of %(name)s created from now on take this step and these limits; "
                    "existing rows of theirs keep their own (edit them one by one)."
                )
                % {"name": obj.name},
            )


def as_loaded(obj: Sequence) -> Sequence:
    """The row as the change form loaded it, before submitted values were written onto it (in the list: the row)."""
    return getattr(obj, "_as_loaded", obj)


def two_lines(main: StrOrPromise, detail: StrOrPromise, *, wrap: bool = False) -> SafeString:
    """A figure with a quieter line under it saying where it comes from; with `wrap`, both may wrap, in a column at
    least 9em wide (the list's narrow columns)."""
    if wrap:
        return format_html(
            '<span style="display: inline-block; min-width: 9em;">{}<br><span class="quiet">{}</span></span>',
            main,
            detail,
        )
    return format_html('<span style="white-space: nowrap;">{}<br><span class="quiet">{}</span></span>', main, detail)


def share_bar(share: float) -> SafeString:
    """A share of the numbers from minimum to maximum as a bar and a percentage."""
    return format_html(
        '<meter min="0" max="1" low="0.75" high="0.9" optimum="0" value="{}" '
        'style="width: 4em; vertical-align: middle;"></meter> {}',
        f"{share:.6f}",
        percentage(share),
    )


def percentage(share: float) -> str:
    """A share as a percentage that never rounds up to 100% before the end, nor down to 0% after the start."""
    if share >= 1:
        return "100%"
    if share == 0:
        return "0%"
    if share < 0.001:
        return "<0.1%"
    if share < 0.1:
        return f"{number_format(int(share * 1000) / 10, decimal_pos=1)}%"
    return f"{int(share * 100)}%"


PACE_UNITS = [
    (1, _("%(count)s a second")),
    (60, _("%(count)s a minute")),
    (3600, _("%(count)s an hour")),
    (86400, _("%(count)s a day")),
]


def pace_text(pace: float | None) -> str:
    """A pace in numbers a second, said in the smallest unit that makes it at least one ("12 a minute")."""
    if pace is None:
        return ""
    seconds, text = next(((s, t) for s, t in PACE_UNITS if pace * s >= 1), PACE_UNITS[-1])
    count = pace * seconds
    if count >= 10 or round(count, 1) == round(count):
        shown = number_format(round(count), force_grouping=True)
    else:
        shown = number_format(round(count, 1), decimal_pos=1)
    return text % {"count": shown}
