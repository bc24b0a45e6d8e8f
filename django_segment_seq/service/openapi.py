"""The OpenAPI 3.1 document of the service, built here so it names the same statuses the views send."""

from __future__ import annotations

from typing import Any

from django_segment_seq.db.rownames import NAME_MAX_LENGTH
from django_segment_seq.snowflake.layouts import LAYOUTS

# The names the service hands out from: the sequence name grammar (docs/id-service.md) less "@", which marks the
# rows fields derive, "/", which ends a path segment, and a leading ".", so never "." or "..".
NAME_PATTERN = r"^[A-Za-z0-9_~%=,:+#-]([A-Za-z0-9_.~%=,:+# -]*[A-Za-z0-9_.~%=,:+#-])?$"
LABEL_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$"
INT64 = {"type": "integer", "format": "int64"}
ERROR = {"$ref": "#/components/schemas/Error"}
WAIT = {"Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}}}


def refusal(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": ERROR}}}
    if headers:
        answer["headers"] = headers
    return answer


def taking(summary: str, parameter: str, description: str, result: str, schema: dict[str, Any]) -> dict[str, Any]:
    """One POST .../next operation; `schema` is its path parameter's."""
    return {
        "post": {
            "summary": summary,
            "operationId": f"next_{parameter}",
            "security": [{"bearer": []}, {"session": []}],
            "parameters": [
                {
                    "name": parameter,
                    "in": "path",
                    "required": True,
                    "description": description,
                    "schema": schema,
                }
            ],
            "requestBody": {
                "required": False,
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Count"}},
                    "application/x-www-form-urlencoded": {"schema": {"$ref": "#/components/schemas/Count"}},
                },
            },
            "responses": {
                "200": {
                    "description": "Taken.",
                    "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{result}"}}},
                },
                "400": refusal("A bad name, body or count; `field` names it."),
                "401": refusal("No valid token.", {"WWW-Authenticate": {"schema": {"type": "string"}}}),
                "403": refusal(
                    "Outside the client's patterns, a row a field derives or numbers gaplessly, a session without "
                    "its CSRF token, past the rows the client may create, or (`error` count_limit) a count the "
                    "schema allows above this client's own largest count."
                ),
                "404": refusal("No such field or sequence (a client creates rows only when it may)."),
                "405": refusal("Only POST."),
                "409": refusal("The sequence is exhausted."),
                "429": refusal("Past the client's rate, or too many failed authentications.", WAIT),
                "503": refusal("Numbers cannot be handed out now.", WAIT),
            },
        }
    }


def schemas(most: int) -> dict[str, Any]:
    """The components' schemas; `most` is the largest count any client may be given (SERVICE_MAX_COUNT)."""
    return {
        "Count": {
            "type": "object",
            "properties": {
                "count": {
                    **INT64,
                    "minimum": 1,
                    "maximum": most,
                    "default": 1,
                    "description": "Up to the client's largest count (at most this maximum); a count above the "
                    "client's own is answered 403 with `error` count_limit.",
                }
            },
        },
        **RESULTS,
    }


RESULTS: dict[str, Any] = {
    "Block": {
        "type": "object",
        "required": ["name", "first", "last", "count", "first_text", "last_text"],
        "properties": {
            "name": {"type": "string"},
            "first": INT64,
            "last": INT64,
            "count": INT64,
            "first_text": {"type": "string", "description": "first as a string, for JavaScript."},
            "last_text": {"type": "string"},
        },
    },
    "Texts": {
        "type": "object",
        "required": ["label", "texts"],
        "properties": {
            "label": {"type": "string"},
            "texts": {"type": "array", "items": {"type": "string"}},
            "values": {"type": "array", "items": INT64, "description": "For an integer field."},
        },
    },
    "Snowflakes": {
        "type": "object",
        "required": ["layout", "ids", "id_texts"],
        "properties": {
            "layout": {"type": "string", "enum": sorted(LAYOUTS)},
            "ids": {"type": "array", "items": INT64},
            "id_texts": {
                "type": "array",
                "items": {"type": "string"},
                "description": "The ids as strings, for JavaScript.",
            },
        },
    },
    "Health": {
        "type": "object",
        "required": ["status"],
        "properties": {"status": {"type": "string"}, "database": {"type": "string"}},
    },
    "Error": {
        "type": "object",
        "required": ["error", "detail"],
        "properties": {
            "error": {"type": "string"},
            "detail": {"type": "string"},
            "field": {"type": "string", "description": "The field a 400 is about."},
            "retry_after": {"type": "integer"},
        },
    },
}


def document(server: str, most: int) -> dict[str, Any]:
    """The document for the service at `server` ("https://ids.example.com/ids", as the request reached it)."""
    name = {"type": "string", "minLength": 1, "maxLength": NAME_MAX_LENGTH, "pattern": NAME_PATTERN, "example": "order"}
    label = {"type": "string", "pattern": LABEL_PATTERN, "example": "shop.Order.reference"}
    layout = {"type": "string", "enum": sorted(LAYOUTS), "example": "classic"}
    return {
        "openapi": "3.1.0",
        "info": {"title": "django-segment-seq ID service", "version": "1", "description": "Unique numbers over HTTP."},
        "servers": [{"url": server, "description": "This service, as the request for this document reached it."}],
        "paths": {
            "/{name}/next": taking("A contiguous block of a sequence.", "name", "The sequence name.", "Block", name),
            "/fields/{label}/next": taking(
                "Values of a field, as it renders them.", "label", "APP_LABEL.Model.field", "Texts", label
            ),
            "/snowflake/{layout}/next": taking("Snowflake ids.", "layout", "The layout.", "Snowflakes", layout),
            "/health": {
                "get": {
                    "summary": "Whether numbers can be handed out now.",
                    "operationId": "health",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "Yes.",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}},
                        },
                        "503": refusal("No.", WAIT),
                    },
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "This document.",
                    "operationId": "openapi",
                    "security": [],
                    "responses": {"200": {"description": "The document."}},
                }
            },
        },
        "components": {
            "schemas": schemas(most),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A client's token (manage.py segment_seq client add).",
                },
                "session": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "sessionid",
                    "description": "A user with the use_id_service permission, with the CSRF token.",
                },
            },
        },
    }
