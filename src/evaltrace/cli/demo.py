"""``evaltrace demo``: the bundled offline demo."""

from __future__ import annotations

import click

__all__ = ["demo"]


@click.command("demo", short_help="Run the offline demo.")
def demo() -> int:
    """Run the demo: capture and score a small question-answering app, offline."""
    from evaltrace.demo import run

    return run()
