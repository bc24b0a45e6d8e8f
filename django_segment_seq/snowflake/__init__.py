"""Snowflake ids: time-ordered 64-bit (or JavaScript-safe 53-bit) ids with worker ids leased from the database."""
