"""Tests of cache/: the cached ranges, prefetch and adaptive sizing."""
