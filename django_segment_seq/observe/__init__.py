"""What a person watches: log records, Prometheus metrics and usage arithmetic, all fed by the cache's events."""
