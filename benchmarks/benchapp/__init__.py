"""Models the benchmark creates rows of."""
