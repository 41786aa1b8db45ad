"""The ``--select`` option: which span of a trace stands for the run."""

from __future__ import annotations

from typing import Any, Final

import click

__all__ = ["SELECTOR_HELP", "SelectorType", "selector"]

SELECTOR_HELP: Final = "root, last_llm_call, first_llm_call, or name:SPAN (the span named SPAN)"
"""The selectors ``--select`` takes (as :data:`evaltrace.evals.SELECTOR_NAMES` says)."""


class SelectorType(click.ParamType[str, Any]):
    """A selector written as ``root``, ``last_llm_call``, ``first_llm_call`` or ``name:X``.

    The value stays text (the selector is built when the command runs, so that reading the
    option loads nothing).
    """

    name = "selector"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        """Check the text; the selector itself is made by :func:`selector`."""
        text = str(value)
        if text in ("root", "last_llm_call", "first_llm_call"):
            return text
        if text.startswith("name:") and text[5:]:
            return text
        self.fail(f"{text!r} is not a selector; use {SELECTOR_HELP}", param, ctx)


def selector(text: str) -> Any:
    """The selector function ``text`` names (checked by :class:`SelectorType`)."""
    from evaltrace.evals import named_selector

    return named_selector(text)
