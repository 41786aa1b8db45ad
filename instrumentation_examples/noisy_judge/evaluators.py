"""A noisy LLM judge, repeated five times and aggregated by each strategy of ``Repeated``.

``summary_grader(strategy=...)`` is a factory: the dataset file lists it once per strategy
(``{"name": "evaluators.py:summary_grader", "args": {"strategy": "median"}}``), so the report
shows, per summary, what each strategy makes of the same five verdicts.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from evaltrace import Evaluable, Evaluation
from evaltrace.judges import Repeated, build_aggregation_strategy, create_llm_evaluator

GRADER = create_llm_evaluator(
    "summary_grader",
    "You grade one-sentence summaries of customer reviews for a product team's dashboard.\n"
    "Review: {eval_input[review]}\n"
    "Summary: {eval_output[summary]}\n"
    "Choose one: A = accurate and complete; B = accurate, misses a minor point; "
    "C = accurate, misses a key point (the verdict, a defect, a return); "
    "D = says something the review does not.",
    choice_scores={"A": 1.0, "B": 0.75, "C": 0.5, "D": 0.0},
)

NAMES = {
    "average": "mean",
    "median": "median",
    "majority_vote": "majority",
    "min": "min",
    "max": "max",
    "at_least_k": "{k}+ >= {threshold}",
    "pass_at_k": "pass@{k}",
}
"""Short column names for the report: the judge runs five times under each."""


def summary_grader(
    strategy: str = "median", k: int | None = None, threshold: float = 0.5
) -> Repeated:
    """The grader run five times, aggregated by ``strategy`` (``k``, ``threshold``: k-of-n)."""
    options: dict[str, Any] = {} if k is None else {"k": k, "threshold": threshold}
    name = NAMES.get(strategy, strategy).format(k=k, threshold=threshold)
    return TakingTurns(
        GRADER, n=5, strategy=build_aggregation_strategy(strategy, **options), name=name
    )


class TakingTurns(Repeated):
    """``Repeated`` that runs its five judge calls while no other ``TakingTurns`` runs its own.

    The offline judge answers its script in the order requests arrive. Taking turns gives each
    strategy the same five verdicts, so the columns of the report differ by strategy alone. A
    real judge samples every call afresh: use ``Repeated`` itself there.
    """

    async def __call__(self, evaluable: Evaluable, *, trace: Any = None) -> Evaluation:
        """Run the judge five times, in this evaluator's turn, and aggregate."""
        async with _turn():
            return await super().__call__(evaluable, trace=trace)


_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def _turn() -> asyncio.Lock:
    """The lock of the running event loop (a lock belongs to one loop)."""
    return _TURNS.setdefault(asyncio.get_running_loop(), asyncio.Lock())
