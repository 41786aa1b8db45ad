"""evaltrace.capture."""
