"""Tests of snowflake/: ids, layouts, worker leases and their listing."""
