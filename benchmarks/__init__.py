"""Benchmarks of django-segment-seq; run with ./dev bench."""
