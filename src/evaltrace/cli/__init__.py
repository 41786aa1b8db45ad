"""The ``evaltrace`` command line."""

from evaltrace.cli.main import main

__all__ = ["main"]
