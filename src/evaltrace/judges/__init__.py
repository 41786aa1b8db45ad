"""evaltrace.judges."""
