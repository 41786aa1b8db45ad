"""evaltrace.metrics."""
