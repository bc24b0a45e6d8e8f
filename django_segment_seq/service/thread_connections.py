"""The connections of a thread that serves many requests, kept as Django's request cycle keeps a request's."""

from __future__ import annotations

from django.db import connections


def replace_failed_connections() -> None:
    """Close this thread's connections that failed and no longer answer, so the next query opens a new one.

    Django's request cycle does this (close_old_connections) around each request; a sync thread that serves
    many (an enclosing caller's, as under the test client) keeps a working connection and replaces a broken one.
    """
    for connection in connections.all(initialized_only=True):
        if connection.errors_occurred:
            connection.close_if_unusable_or_obsolete()
