"""evaltrace.trace."""
