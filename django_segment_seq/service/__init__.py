"""The ID service over HTTP, an app of its own ("django_segment_seq.service" in INSTALLED_APPS, label
segment_seq_service): clients with hashed tokens, scopes and rates, JSON views. Imports nothing, so that remote.py,
the client for programs without Django, loads without it."""
