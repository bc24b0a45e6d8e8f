"""The tier's face: the admin shows what Redis holds for a row and drops it; redis-check asks a server."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from tests.redis.conftest import tier

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_admin_shows_the_super_segment_and_drops_it(settings, redis_server, admin_client):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    assert [next_value("r1") for _ in range(3)] == [1, 2, 3]
    row = Sequence.objects.get(name="r1")
    page = admin_client.get(reverse("admin:django_segment_seq_sequence_change", args=[row.pk])).content.decode()
    assert "1 to 1,000, 990 left" in page
    admin_client.post(
        reverse("admin:django_segment_seq_sequence_changelist"),
        {"action": "drop_redis_state", "_selected_action": [row.pk]},
    )
    assert redis_server.client().keys("segseq:*") == []
    page = admin_client.get(reverse("admin:django_segment_seq_sequence_change", args=[row.pk])).content.decode()
    assert "nothing: the next block reserves" in page


def test_redis_check_passes_a_plain_server_and_warns_on_a_shared_cache(settings, redis_server, capsys):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    settings.CACHES = {
        **settings.CACHES,
        "shared": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_server.url},
    }
    call_command("segment_seq", "redis-check")
    out = capsys.readouterr().out
    assert "OK: scripts may call INFO" in out and "maxmemory-policy is noeviction" in out
    assert "WARNING: the cache 'shared' uses this Redis database" in out


def test_redis_check_fails_when_redis_cannot_be_reached(settings, redis_server):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    redis_server.kill()
    with pytest.raises(CommandError):
        call_command("segment_seq", "redis-check")
