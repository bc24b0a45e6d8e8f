"""The clients in the admin: the token is shown once, on the page that answers the addition (never in a message,
which Django's cookie storage would carry in the browser's cookie); only its start and digest are kept."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from django_segment_seq.service.models import Client
from django_segment_seq.service.tokens import digest, new_token, shown_part

if TYPE_CHECKING:
    _ClientAdminBase = admin.ModelAdmin[Client]
else:
    _ClientAdminBase = admin.ModelAdmin


# What the service writes on a client's row: shown on its page, never edited there.
KEPT = ["previous_valid_until", "created_at", "last_used_at", "requests", "numbers", "rows_created"]


@admin.register(Client)
class ClientAdmin(_ClientAdminBase):
    list_display = [
        "name",
        "token_start",
        "sequences",
        "max_count",
        "rate",
        "last_used_at",
        "requests",
        "numbers",
        "revoked_at",
    ]
    list_filter = ["revoked_at"]
    search_fields = ["name", "sequences"]
    readonly_fields = ["token_start", *KEPT]
    fields = ["name", "token_start", "sequences", "max_count", "rate", "max_new_rows", "revoked_at", *KEPT]
    # The request attribute holding the token of the client just added, until the answer's page shows it.
    new_token_attribute = "segment_seq_new_token"

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
