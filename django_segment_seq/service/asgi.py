"""The ID service's `POST .../next` without Django's request cycle: an ASGI application in front of the project's.

    # asgi.py
    from django.core.asgi import get_asgi_application
    from django_segment_seq.service.asgi import fast_ids

    application = fast_ids(get_asgi_application())

It answers a bearer-token request for numbers itself, with the service's own admission, handout and answers
(exchange.py, the code the ASGI view runs), and passes every other request to Django: session callers, the
other endpoints, other paths, bodies it would have to stream, and requests Django could refuse before a view (a
host ALLOWED_HOSTS refuses, plain HTTP under SECURE_SSL_REDIRECT). On the hot path nothing leaves the event
loop: a token found valid lately is in memory (and so is admit()'s answer to the same request from it, counted
against the caller's rate by admit()'s rule), a rate is counted in a local-memory cache, the numbers come from
the process's cached range; the database (an unknown token, the usage write, a new range) and any other cache
are asked on a thread of the request's own, as Django's handler gives each request. See docs/id-service.md,
"The fast path".
"""

from __future__ import annotations

from typing import Any


def fast_ids(django_application: Any) -> Any:
    """The project's ASGI application with the service's requests for numbers answered in front of it.

    Call it with the application get_asgi_application() returned: the service's modules need Django set up.
    """
    from django_segment_seq.service.fastpath import in_front_of  # after django.setup(), which the argument ran

    return in_front_of(django_application)
