"""Tests of db/ and the Sequence table: routing, SQLite's single writer, the model's writes."""
