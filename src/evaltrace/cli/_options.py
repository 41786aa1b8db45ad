"""Options several commands share: ``--format`` and ``-v``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["output_format", "verbose"]

F = TypeVar("F", bound=Callable[..., Any])


def output_format(text: str, json: str) -> Callable[[F], F]:
    """``--format text|json`` (``output_format`` in the command), saying what each prints."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help=f"text: {text}; json: {json}.",
    )


def verbose(meaning: str) -> Callable[[F], F]:
    """``-v`` / ``--verbose``, with what it adds."""
    return click.option("-v", "--verbose", is_flag=True, help=meaning)
