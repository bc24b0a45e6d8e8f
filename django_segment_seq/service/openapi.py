"""The OpenAPI 3.1 document of the service, built here so it names the same statuses the views send."""

from __future__ import annotations

from typing import Any

ERROR = {"$ref": "#/components/schemas/Error"}
WAIT = {"Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}}}


def refusal(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": ERROR}}}
    if headers:
        answer["headers"] = headers
    return answer


def taking(summary: str, parameter: str, description: str, result: str) -> dict[str, Any]:
    """One POST .../next operation."""
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
                    "schema": {"type": "string"},
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
                "403": refusal("Outside the client's patterns, or a session without its CSRF token."),
                "404": refusal("No such field, layout or sequence (when rows are not created on first use)."),
                "405": refusal("Only POST."),
                "409": refusal("The sequence is exhausted."),
                "429": refusal("Past the client's rate.", WAIT),
                "503": refusal("Numbers cannot be handed out now.", WAIT),
            },
        }
    }


SCHEMAS: dict[str, Any] = {
    "Count": {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 1, "default": 1, "description": "Up to the client's largest count."}
        },
    },
    "Block": {
        "type": "object",
        "required": ["name", "first", "last", "count", "first_text", "last_text"],
        "properties": {
            "name": {"type": "string"},
            "first": {"type": "integer"},
            "last": {"type": "integer"},
            "count": {"type": "integer"},
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
            "values": {"type": "array", "items": {"type": "integer"}, "description": "For an integer field."},
        },
    },
    "Snowflakes": {
        "type": "object",
        "required": ["layout", "ids", "id_texts"],
        "properties": {
            "layout": {"type": "string"},
            "ids": {"type": "array", "items": {"type": "integer"}},
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


def document(prefix: str) -> dict[str, Any]:
    """The document for the service mounted at `prefix` ("/ids")."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "django-segment-seq ID service", "version": "1", "description": "Unique numbers over HTTP."},
        "servers": [{"url": prefix}],
        "paths": {
            "/{name}/next": taking("A contiguous block of a sequence.", "name", "The sequence name.", "Block"),
            "/fields/{label}/next": taking(
                "Values of a field, as it renders them.", "label", "APP_LABEL.Model.field", "Texts"
            ),
            "/snowflake/{layout}/next": taking("Snowflake ids.", "layout", "classic or js53.", "Snowflakes"),
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
            "schemas": SCHEMAS,
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
