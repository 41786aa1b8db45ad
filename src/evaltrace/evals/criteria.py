"""Pass criteria over a results matrix ``[inputs][evaluators]``, and the run's pass threshold.

The engine scores each entry inside :func:`passing_at` ``(threshold)``, so an evaluator whose
work depends on what passes (a repeated judge that stops once its verdict is settled) reads
the run's threshold with :func:`pass_threshold`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeAlias

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.constants import DEFAULT_THRESHOLD
from evaltrace.evals.evaluation import Evaluation

__all__ = ["PassCriteria", "ScoreThreshold", "as_pass_criteria", "pass_threshold", "passing_at"]

_THRESHOLD: ContextVar[float] = ContextVar("evaltrace_pass_threshold", default=DEFAULT_THRESHOLD)


def pass_threshold() -> float:
    """The score an evaluation must reach to pass in the run scoring now.

    The run's threshold inside :func:`passing_at` (the engine sets it around each entry's
    evaluators); :data:`~evaltrace.constants.DEFAULT_THRESHOLD` outside any run.

    Example:
        >>> with passing_at(0.8):
        ...     pass_threshold()
        0.8
    """
    return _THRESHOLD.get()


@contextmanager
def passing_at(threshold: float) -> Iterator[None]:
    """Make ``threshold`` the passing score of the evaluations run in the block."""
    token = _THRESHOLD.set(threshold)
    try:
        yield
    finally:
        _THRESHOLD.reset(token)


PassCriteria: TypeAlias = Callable[[list[list[Evaluation]]], tuple[bool, str]]
"""Receives the results matrix ``[inputs][evaluators]``; returns ``(passed, message)``."""


@dataclass(frozen=True)
class ScoreThreshold:
    """Pass when at least ``pct`` of the inputs pass; an input passes when all its scores do.

    A score passes when it is ``>= threshold``. An errored evaluation fails its input. A skipped
    evaluation, or one that gave only a label, is left out; an input whose evaluations were all
    left out is left out of the fraction. An input missing evaluations (an empty row, or fewer
    evaluations than the widest row) fails: nothing missing ever counts as a pass. No input
    (or none scored) fails the check.

    Example:
        >>> ScoreThreshold(threshold=0.7, pct=0.9)
        ScoreThreshold(threshold=0.7, pct=0.9)
    """

    threshold: float = DEFAULT_THRESHOLD
    """Minimum score of one evaluation."""
    pct: float = 1.0
    """Fraction of the inputs (0 to 1) that must pass."""

    def __post_init__(self) -> None:
        for field, value in (("threshold", self.threshold), ("pct", self.pct)):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 <= value <= 1
            ):
                raise ValueError(
                    f"ScoreThreshold.{field} must be a number in [0, 1], got {safe_repr(value)}"
                )

    def input_passed(self, row: Sequence[Evaluation], width: int = 1) -> bool | None:
        """Whether one input passed; ``None`` when all its evaluations were left out.

        Args:
            row: The evaluations of the input.
            width: How many evaluations it should have (one per evaluator); a row with fewer
                fails.
        """
        if len(row) < max(width, 1):
            return False
        scored = [e for e in row if e.counts_toward_pass]
        if not scored:
            return None
        return all(e.passed(self.threshold) for e in scored)

    def __call__(self, results: list[list[Evaluation]]) -> tuple[bool, str]:
        """Judge the matrix; returns ``(passed, message)``."""
        width = max((len(row) for row in results), default=0)
        verdicts = [self.input_passed(row, width) for row in results]
        counted = [v for v in verdicts if v is not None]
        skipped = len(verdicts) - len(counted)
        rule = f"every score >= {self.threshold:g} on at least {self.pct:.0%} of inputs"
        if not counted:
            what = "no inputs were given" if not results else "no input was scored"
            return False, f"{what}; {rule} is required"
        passing = sum(counted)
        fraction = passing / len(counted)
        note = (
            f" ({skipped} input(s) with only skipped or labelled evaluations not counted)"
            if skipped
            else ""
        )
        missing = sum(1 for row in results if len(row) < max(width, 1))
        if missing:
            note += f" ({missing} input(s) missing evaluations counted as failed)"
        message = (
            f"{passing} of {len(counted)} inputs passed ({fraction:.0%}); required {rule}{note}"
        )
        return fraction >= self.pct - 1e-12, message


def as_pass_criteria(given: object) -> PassCriteria:
    """The pass criteria ``given`` stands for: ``None`` the default, a number a threshold.

    Args:
        given: ``None`` (``ScoreThreshold()``), a number in [0, 1] (``ScoreThreshold`` with
            that threshold), or pass criteria (a callable such as a :class:`ScoreThreshold`).

    Raises:
        TypeError: ``given`` is neither.
        ValueError: A number outside [0, 1].

    Example:
        >>> as_pass_criteria(0.8)
        ScoreThreshold(threshold=0.8, pct=1.0)
    """
    if given is None:
        return ScoreThreshold()
    if isinstance(given, int | float) and not isinstance(given, bool):
        return ScoreThreshold(threshold=given)
    if not callable(given):
        raise TypeError(
            f"pass_criteria must be a ScoreThreshold (e.g. ScoreThreshold(threshold=0.7, "
            f"pct=0.9)), a threshold number, or a callable of the results matrix, got "
            f"{type_name(given)} {safe_repr(given)[:60]}"
        )
    return given
