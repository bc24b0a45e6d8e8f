"""Stress harness: many processes allocating at once, every number collected and checked for repeats."""
