"""Whatever is sent to the service in process, both URL modules and the fast path answer in JSON below 500 (or 503),
never raise.

Django's test client re-raises a view's exception, so an error the views did not answer fails here; the live
servers get the same kind of requests in tests/processes/test_id_service.py."""

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client as HttpClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fast_client import FastClient

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF, exclude_characters="#?/%"), max_size=20)
PATHS = st.one_of(
    st.lists(TEXT, max_size=4).map("/".join),
    st.sampled_from(["order-fuzz/next", "fields/testapp.Parcel.code/next", "snowflake/js53/next", "health"]),
    st.builds("{}/next".format, TEXT),
)
BODIES = st.one_of(
    st.binary(max_size=100),
    st.builds(lambda v: json.dumps({"count": v}).encode(), st.one_of(st.integers(), st.floats(), st.text(), st.none())),
    st.builds(lambda v: f"count={v}".encode(), TEXT),
)
CONTENT_TYPES = st.sampled_from(
    ["application/json", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain", ""]
)


def test_fuzz_in_process():
    out = StringIO()
    call_command("segment_seq", "client", "add", "fuzz", "--sequences", "*", "--max-count", "50", stdout=out)
    token = re.findall(r"ssq_\S+", out.getvalue())[-1]

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(
        prefix=st.sampled_from(["/ids/", "/aids/", "fast"]),
        method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]),
        path=PATHS,
        body=BODIES,
        content_type=CONTENT_TYPES,
        authorization=st.one_of(st.just(f"Bearer {token}"), st.text(max_size=40), st.none()),
    )
    def request(prefix, method, path, body, content_type, authorization):
        headers = {"Authorization": authorization} if authorization is not None else {}
        client = FastClient() if prefix == "fast" else HttpClient()
        url = ("/ids/" if prefix == "fast" else prefix) + path
        response = client.generic(method, url, body, content_type=content_type, headers=headers)
        assert response.status_code < 500 or response.status_code == 503, response.content[:300]
        if method != "HEAD":
            assert isinstance(json.loads(response.content), dict)

    request()
