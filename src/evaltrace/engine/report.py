"""The text table of what was evaluated: input, output, expected, evaluator, score, why.

:class:`~evaltrace.EvalAssertionError` carries it, so a failed ``assert_pass`` reads like a
report rather than a stack of numbers. Values, reasoning and errors come from the app and its
evaluators, so the table shows their terminal control characters escaped (:func:`printable`)
rather than obeyed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaltrace._safe_text import printable
from evaltrace.engine.inputs import InputResult
from evaltrace.evals.criteria import PassCriteria, ScoreThreshold
from evaltrace.evals.display import short_text
from evaltrace.evals.evaluable import collapse_named_data
from evaltrace.evals.evaluation import Evaluation
from evaltrace.results.model import EntryResult

__all__ = ["entries_table", "results_table"]

_ALL_ROWS_UP_TO = 10
_MAX_LISTED_INPUTS = 50
_VALUE_WIDTH = 24
_WHY_WIDTH = 60


@dataclass(frozen=True, kw_only=True)
class _Row:
    """What the table shows of one input or entry."""

    label: str
    input: Any
    output: str
    expectation: str | None
    evaluations: Sequence[Evaluation]
    width: int
    """How many evaluations the row should hold (fewer fail)."""


def _input_row(item: InputResult, width: int) -> _Row:
    evaluable = item.evaluable
    if evaluable is None or evaluable.eval_output is None:
        output = "-"  # the run failed or never happened: the error column says why
    else:
        output = short_text(evaluable.output_value(), _VALUE_WIDTH)
    has_expectation = evaluable is not None and evaluable.has_expectation
    return _Row(
        label=str(item.index),
        input=item.eval_input,
        output=output,
        expectation=short_text(evaluable.expectation, _VALUE_WIDTH)
        if evaluable is not None and has_expectation
        else None,
        evaluations=item.evaluations,
        width=width,
    )


def _entry_row(entry: EntryResult) -> _Row:
    output = (
        "-"
        if entry.eval_output is None
        else short_text(collapse_named_data(entry.eval_output), _VALUE_WIDTH)
    )
    return _Row(
        label=entry.name,
        input=entry.input,
        output=output,
        expectation=short_text(entry.expectation, _VALUE_WIDTH) if entry.has_expectation else None,
        evaluations=entry.evaluations,
        width=len(entry.evaluations),
    )


def results_table(
    inputs: Sequence[InputResult], names: Sequence[str], criteria: PassCriteria | None = None
) -> str:
    """A plain-text table: input, output, expected, evaluator, score, result, why.

    Up to ten inputs are all listed; beyond that only the inputs that did not pass (as judged
    by a :class:`ScoreThreshold`), at most fifty. Values are shortened to one line; the
    ``expected`` column appears when some listed input has an expectation, ``-`` marks a
    value that is not known (no expectation, or no output because the run failed).
    """
    return _table([_input_row(item, len(names)) for item in inputs], names, criteria, "#", "inputs")


def entries_table(
    entries: Sequence[EntryResult], names: Sequence[str], criteria: PassCriteria | None = None
) -> str:
    """The table of :func:`results_table` for saved entries, each named by its entry name.

    ``names`` are the evaluators' display names, used where an evaluation names none.
    """
    return _table([_entry_row(entry) for entry in entries], names, criteria, "entry", "entries")


def _table(
    listed: list[_Row],
    names: Sequence[str],
    criteria: PassCriteria | None,
    label: str,
    noun: str,
) -> str:
    threshold = criteria.threshold if isinstance(criteria, ScoreThreshold) else None
    if len(listed) > _ALL_ROWS_UP_TO and isinstance(criteria, ScoreThreshold):
        listed = [row for row in listed if not criteria.input_passed(row.evaluations, row.width)]
    hidden = max(0, len(listed) - _MAX_LISTED_INPUTS)
    listed = listed[:_MAX_LISTED_INPUTS]
    with_expected = any(row.expectation is not None for row in listed)
    header = [label, "input", "output", "expected", "evaluator", "score", "result"]
    rows: list[tuple[list[str], str]] = [(header, "reasoning / error")]
    for row in listed:
        for position, evaluation in enumerate(row.evaluations):
            if evaluation.error is not None:
                score, verdict = "-", "ERROR"
                why = f"{evaluation.error.type}: {evaluation.error.message}"
            elif evaluation.skipped:
                score, verdict, why = "-", "SKIP", evaluation.reasoning
            elif evaluation.score is None:  # a label alone: neither a pass nor a failure
                score, verdict, why = "-", f"LABEL {evaluation.label}", evaluation.reasoning
            else:
                assert evaluation.score is not None
                score = f"{evaluation.score:.2f}"
                ok = threshold is None or evaluation.score >= threshold
                verdict = "pass" if ok else "FAIL"
                why = evaluation.reasoning
            first = position == 0
            name = evaluation.evaluator or (names[position] if position < len(names) else "?")
            cells = [
                row.label if first else "",
                short_text(row.input, _VALUE_WIDTH) if first else "",
                row.output if first else "",
                (row.expectation or "-") if first else "",
                name,
                score,
                verdict,
            ]
            rows.append(
                ([printable(cell) for cell in cells], printable(short_text(why, _WHY_WIDTH)))
            )
    columns = [col for col in range(len(header)) if with_expected or header[col] != "expected"]
    widths = {col: max(len(cells[col]) for cells, _ in rows) for col in columns}
    lines = []
    for cells, why in rows:
        shown = [cells[col].ljust(widths[col]) for col in columns]
        lines.append(("  ".join(shown) + "  " + why).rstrip())
    if hidden:
        lines.append(f"... and {hidden} more {noun} not listed")
    return "\n".join(lines)
