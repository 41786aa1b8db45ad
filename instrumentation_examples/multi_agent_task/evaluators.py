"""The multi-agent dataset's evaluator: did the task end the way the entry expects?"""

from __future__ import annotations

from evaltrace import Evaluation, EvaluatorContext


def outcome_as_expected(ctx: EvaluatorContext) -> Evaluation:
    """1.0 when the task's outcome (read back from the agents' trace files) is the expected one.

    The entry's expectation is a ``CompletionStatus`` name. The dataset pins each task's known
    outcome, so a change in the team (the bread no longer baked) or in how runs are read back (a
    cut-off log counted as a success) fails the entry.
    """
    if not ctx.has_expectation:
        return Evaluation.skip("the entry gives no expected outcome (expectation)")
    status = ctx.output("task_status")
    agents = ", ".join(
        f"{agent} {state}" for agent, state in ctx.output("agent_statuses", {}).items()
    )
    verdict = "as expected" if status == ctx.expectation else f"expected {ctx.expectation}"
    return Evaluation(
        score=float(status == ctx.expectation),
        reasoning=f"task {status} ({agents}), {verdict}",
    )
