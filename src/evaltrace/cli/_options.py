"""Options several commands share: ``--format``, ``-v``, statistics, the regression gate."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import click

from evaltrace.constants import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SIGNIFICANCE,
    DEFAULT_STATISTICS_SEED,
)

if TYPE_CHECKING:
    from evaltrace.llm.prices import PriceTable
    from evaltrace.results import RunDiff

__all__ = [
    "GATE_OPTION",
    "Gate",
    "GatedCommand",
    "gate_fails",
    "gate_level",
    "output_format",
    "prices_option",
    "regression_gate",
    "statistics_options",
    "verbose",
]

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


def statistics_options(what: str) -> Callable[[F], F]:
    """``--confidence``, ``--resamples`` and ``--seed`` of ``what``.

    ``what`` names the intervals they set: the run's, or the comparison's.
    """

    def decorate(function: F) -> F:
        function = click.option(
            "--seed",
            "statistics_seed",
            type=int,
            default=DEFAULT_STATISTICS_SEED,
            show_default=True,
            help=f"The seed of the bootstrap's resamples for {what}.",
        )(function)
        function = click.option(
            "--resamples",
            type=click.IntRange(min=0),
            default=DEFAULT_RESAMPLES,
            show_default=True,
            help=f"How often the bootstrap resamples the entries for {what}; 0 for none.",
        )(function)
        return click.option(
            "--confidence",
            type=click.FloatRange(0, 1, min_open=True, max_open=True),
            default=DEFAULT_CONFIDENCE,
            show_default=True,
            help=f"The confidence level of {what} (0.95: 95% intervals).",
        )(function)

    return decorate


def prices_option(what: str) -> Callable[[F], F]:
    """``--prices FILE``: the price table ``what`` is computed by, read (and checked) at once.

    The command gets ``prices``: the table, or ``None`` when the option was not given.
    """
    return click.option(
        "--prices",
        "prices",
        type=click.Path(dir_okay=False),
        metavar="FILE",
        callback=_prices,
        help=(
            f"A price table (YAML: models: {{name: {{input: ..., output: ..., cached: ...}}}}, "
            f"per million tokens) {what} is computed by (default: the file EVALTRACE_PRICES "
            "names; without one the cost is unknown)."
        ),
    )


def _prices(ctx: click.Context, param: click.Parameter, value: str | None) -> PriceTable | None:
    if value is None:
        return None
    from evaltrace.errors import PriceFileError
    from evaltrace.llm.prices import load_prices

    try:
        return load_prices(value)
    except PriceFileError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


Gate = Literal["any"] | float
"""When a comparison fails a command: on any regression, or on a significant one at a level."""

GATE_OPTION: Final = "--fail-on-regression"
_DEFAULT_GATE: Final = "significant"


def regression_gate(baseline: str) -> Callable[[F], F]:
    """``--fail-on-regression[=any|LEVEL]`` of a comparison with ``baseline``.

    The command gets ``fail_on_regression``: a :data:`Gate`, or ``None`` when not given.
    """
    return click.option(
        GATE_OPTION,
        "fail_on_regression",
        is_flag=False,
        flag_value=_DEFAULT_GATE,
        default=None,
        metavar="[any|LEVEL]",
        callback=_gate,
        help=(
            f"Exit 1 when something got significantly worse than {baseline} (a 'worse' "
            f"verdict at level {DEFAULT_SIGNIFICANCE:g}, after Holm's correction); "
            f"{GATE_OPTION}=LEVEL sets the level, {GATE_OPTION}=any fails on any entry or "
            "result that got worse, significant or not."
        ),
    )


def _gate(ctx: click.Context, param: click.Parameter, value: str | None) -> Gate | None:
    if value is None:
        return None
    if value == _DEFAULT_GATE:
        return DEFAULT_SIGNIFICANCE
    if value == "any":
        return "any"
    level = _level(value)
    if level is None:
        raise click.BadParameter(
            f"takes 'any' or a significance level between 0 and 1 (such as 0.01), got "
            f"{value!r}; write {GATE_OPTION}=LEVEL",
            ctx=ctx,
            param=param,
        )
    return level


def _level(value: str) -> float | None:
    try:
        level = float(value)
    except ValueError:
        return None
    return level if math.isfinite(level) and 0 < level < 1 else None


class GatedCommand(click.Command):
    """A command whose ``--fail-on-regression`` takes only a value of its own.

    Its value is taken when attached or when what follows is one (``any`` or a level), so
    that ``--fail-on-regression OLD NEW`` keeps OLD as an argument.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _attached(args))


def _attached(args: Sequence[str]) -> list[str]:
    """``args``, a bare :data:`GATE_OPTION` given its default value.

    Unless what follows it is one of its values.
    """
    given = list(args)
    for position, arg in enumerate(given):
        if arg == "--":
            break
        if arg != GATE_OPTION:
            continue
        following = given[position + 1] if position + 1 < len(given) else None
        if following is None or (following != "any" and _level(following) is None):
            given[position] = f"{GATE_OPTION}={_DEFAULT_GATE}"
    return given


def gate_level(gate: Gate | None) -> float:
    """The significance level of the verdicts: the gate's, or the default one."""
    return gate if isinstance(gate, float) else DEFAULT_SIGNIFICANCE


def gate_fails(diff: RunDiff, gate: Gate | None) -> bool:
    """Whether ``diff`` fails the command under ``gate`` (never without one)."""
    if gate is None:
        return False
    if gate == "any":
        return diff.has_regressions
    return bool(diff.significant_regressions)
