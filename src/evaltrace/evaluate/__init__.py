"""evaltrace.evaluate."""
