"""The clients in the admin: the token is shown once, on the page that answers the addition (never in a message,
which Django's cookie storage would carry in the browser's cookie); only its start and digest are kept."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext_lazy as _

from django_segment_seq.service.models import Client
from django_segment_seq.service.tokens import digest, new_token, shown_part

if TYPE_CHECKING:
    _ClientAdminBase = admin.ModelAdmin[Client]
else:
    _ClientAdminBase = admin.ModelAdmin


# What the service writes on a client's row: shown on its page, never edited there.
KEPT = ["previous_valid_until", "created_at", "last_used_at", "requests", "numbers", "rows_created"]
# What a client being added has nothing of yet: its token (shown once, on the page that answers the form), a
# revocation and the service's counts.
NOT_ON_ADD = {"token_start", "revoked_at", *KEPT}


@admin.register(Client)
class ClientAdmin(_ClientAdminBase):
    # Short headers, patterns that wrap and counts grouped, so that the list fits a 1280-pixel window beside the
    # filter (its template leaves out the navigation sidebar).
    list_display = [
        "name",
        "token_start",
        "patterns",
        "largest_count",
        "rate",
        "last_use",
        "requests_shown",
        "numbers_shown",
        "revoked",
    ]
    list_filter = ["revoked_at"]
    search_fields = ["name", "sequences"]
    readonly_fields = ["token_start", *KEPT]
    fields = ["name", "token_start", "sequences", "max_count", "rate", "max_new_rows", "revoked_at", *KEPT]
    # The request attribute holding the token of the client just added, until the answer's page shows it.
    new_token_attribute = "segment_seq_new_token"

    def get_fields(self, request: HttpRequest, obj: Client | None = None) -> Any:  # the stubs' lists or tuples
        fields = super().get_fields(request, obj)
        return fields if obj is not None else [field for field in fields if field not in NOT_ON_ADD]

    @admin.display(description=_("sequences"), ordering="sequences")
    def patterns(self, obj: Client) -> SafeString:
        """The patterns one under another when the column is narrow (a line may break after each comma)."""
        parts = [part.strip() for part in obj.sequences.split(",") if part.strip()]
        return format_html_join(
            mark_safe(",<wbr> "), '<span style="white-space: nowrap;">{}</span>', ((part,) for part in parts)
        )

    @admin.display(description=_("last use"), ordering="last_used_at", empty_value="-")
    def last_use(self, obj: Client) -> SafeString | None:
        return date_over_time(obj.last_used_at)

    @admin.display(description=_("revoked"), ordering="revoked_at", empty_value="-")
    def revoked(self, obj: Client) -> SafeString | None:
        return date_over_time(obj.revoked_at)

    @admin.display(description=_("max count"), ordering="max_count")
    def largest_count(self, obj: Client) -> str:
        return number_format(obj.max_count, force_grouping=True)

    @admin.display(description=_("requests"), ordering="requests")
    def requests_shown(self, obj: Client) -> str:
        return number_format(obj.requests, force_grouping=True)

    @admin.display(description=_("numbers"), ordering="numbers")
    def numbers_shown(self, obj: Client) -> str:
        return number_format(obj.numbers, force_grouping=True)

    def save_model(self, request: HttpRequest, obj: Client, form: Any, change: bool) -> None:
        """A new client gets its token here; response_add() shows it."""
        if not change:
            token = new_token()
            obj.token_start, obj.token_digest = shown_part(token), digest(token)
            setattr(request, self.new_token_attribute, token)
        super().save_model(request, obj, form, change)

    def response_add(self, request: HttpRequest, obj: Client, post_url_continue: str | None = None) -> HttpResponse:
        """The page showing the new token once, rendered in this answer: no message, so no cookie, carries it."""
        token = getattr(request, self.new_token_attribute, None)
        if token is None:
            return super().response_add(request, obj, post_url_continue)
        context = {**self.admin_site.each_context(request), "opts": self.opts, "client": obj, "token": token}
        response = TemplateResponse(request, "admin/segment_seq_service/client/token.html", context)
        response["Cache-Control"] = "no-store"
        return response


def date_over_time(moment: datetime.datetime | None) -> SafeString | None:
    """A moment in the current time zone as a date over a time (2026-11-30 / 14:05): a narrow column."""
    if moment is None:
        return None
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment  # naive with USE_TZ off
    return format_html(
        '<span style="white-space: nowrap;">{}<br><span class="quiet">{}</span></span>',
        local.strftime("%Y-%m-%d"),
        local.strftime("%H:%M"),
    )
