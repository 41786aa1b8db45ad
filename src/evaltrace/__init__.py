"""evaltrace: trace capture and evaluation for LLM applications."""
