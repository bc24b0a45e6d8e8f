"""The Redis tier: blocks for chosen rows from Redis, inside super-segments the table lends it by compare-and-set,
fenced by the run_id of the Redis server process that installed them, so a fault costs gaps, never repeats."""
