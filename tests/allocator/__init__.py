"""Tests of allocator/: compare-and-set, blocks, the caller-transaction decision, private connections."""
