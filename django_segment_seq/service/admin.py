"""The clients in the admin: the token is shown once, when a client is added; only its start and digest are kept."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.http import HttpRequest

from django_segment_seq.service.models import Client
from django_segment_seq.service.tokens import digest, new_token, shown_part

if TYPE_CHECKING:
    _ClientAdminBase = admin.ModelAdmin[Client]
else:
    _ClientAdminBase = admin.ModelAdmin


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
    readonly_fields = ["token_start", "previous_valid_until", "created_at", "last_used_at", "requests", "numbers"]
    fields = [
        "name",
        "token_start",
        "sequences",
        "max_count",
        "rate",
        "revoked_at",
        "previous_valid_until",
        "created_at",
        "last_used_at",
        "requests",
        "numbers",
    ]

    def save_model(self, request: HttpRequest, obj: Client, form: Any, change: bool) -> None:
        """A new client gets its token here, shown once in a message."""
        if not change:
            token = new_token()
            obj.token_start, obj.token_digest = shown_part(token), digest(token)
            super().save_model(request, obj, form, change)
            messages.warning(request, f"The token of {obj.name} (shown once, copy it now): {token}")
            return
        super().save_model(request, obj, form, change)
