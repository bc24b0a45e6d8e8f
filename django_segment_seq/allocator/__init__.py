"""Blocks of numbers taken from the Sequence table with compare-and-set, each committed where the caller's
transaction allows: the loop, block arithmetic, the caller-transaction decision and private connections."""
