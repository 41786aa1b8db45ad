"""The text table of what was evaluated: input, output, expected, evaluator, score, why.

:class:`~evaltrace.EvalAssertionError` carries it, so a failed ``assert_pass`` reads like a
report rather than a stack of numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaltrace.evals.criteria import PassCriteria, ScoreThreshold
from evaltrace.evals.display import short_text
from evaltrace.evals.runner import InputResult

__all__ = ["results_table"]

_ALL_ROWS_UP_TO = 10
_MAX_LISTED_INPUTS = 50
_VALUE_WIDTH = 24
_WHY_WIDTH = 60


def _shown_output(item: InputResult) -> str:
    evaluable = item.evaluable
    if evaluable is None or evaluable.eval_output is None:
        return "-"  # the run failed or never happened: the error column says why
    return short_text(evaluable.output_value(), _VALUE_WIDTH)


def _shown_expectation(item: InputResult) -> str:
    evaluable = item.evaluable
    if evaluable is None or not evaluable.has_expectation:
        return "-"
    return short_text(evaluable.expectation, _VALUE_WIDTH)


def results_table(
    inputs: Sequence[InputResult], names: Sequence[str], criteria: PassCriteria | None = None
) -> str:
    """A plain-text table: input, output, expected, evaluator, score, result, why.

    Up to ten inputs are all listed; beyond that only the inputs that did not pass (as judged
    by a :class:`ScoreThreshold`), at most fifty. Values are shortened to one line; the
    ``expected`` column appears when some listed input has an expectation, ``-`` marks a
    value that is not known (no expectation, or no output because the run failed).
    """
    threshold = criteria.threshold if isinstance(criteria, ScoreThreshold) else None
    listed = list(inputs)
    if len(listed) > _ALL_ROWS_UP_TO and isinstance(criteria, ScoreThreshold):
        listed = [
            item for item in listed if not criteria.input_passed(item.evaluations, len(names))
        ]
    hidden = max(0, len(listed) - _MAX_LISTED_INPUTS)
    listed = listed[:_MAX_LISTED_INPUTS]
    with_expected = any(
        item.evaluable is not None and item.evaluable.has_expectation for item in listed
    )
    header = ["#", "input", "output", "expected", "evaluator", "score", "result"]
    rows: list[tuple[list[str], str]] = [(header, "reasoning / error")]
    for item in listed:
        for position, evaluation in enumerate(item.evaluations):
            if evaluation.error is not None:
                score, verdict = "-", "ERROR"
                why = f"{evaluation.error.type}: {evaluation.error.message}"
            elif evaluation.skipped:
                score, verdict, why = "-", "SKIP", evaluation.reasoning
            else:
                assert evaluation.score is not None
                score = f"{evaluation.score:.2f}"
                ok = threshold is None or evaluation.score >= threshold
                verdict = "pass" if ok else "FAIL"
                why = evaluation.reasoning
            first = position == 0
            name = names[position] if position < len(names) else evaluation.evaluator or "?"
            cells = [
                str(item.index) if first else "",
                short_text(item.eval_input, _VALUE_WIDTH) if first else "",
                _shown_output(item) if first else "",
                _shown_expectation(item) if first else "",
                name,
                score,
                verdict,
            ]
            rows.append((cells, short_text(why, _WHY_WIDTH)))
    columns = [col for col in range(len(header)) if with_expected or header[col] != "expected"]
    widths = {col: max(len(cells[col]) for cells, _ in rows) for col in columns}
    lines = []
    for cells, why in rows:
        shown = [cells[col].ljust(widths[col]) for col in columns]
        lines.append(("  ".join(shown) + "  " + why).rstrip())
    if hidden:
        lines.append(f"... and {hidden} more inputs not listed")
    return "\n".join(lines)
