"""evaltrace.testing."""
