"""Evaluators of the support bot's stored traces."""

from __future__ import annotations

from evaltrace import Evaluation, EvaluatorContext


def answers_from_the_tool(ctx: EvaluatorContext) -> Evaluation:
    """1.0 when the answer repeats what the order lookup returned."""
    assert ctx.trace is not None
    lookups = [node for root in ctx.trace for node in root.find("lookup_order")]
    if not lookups:
        return Evaluation(score=0.0, reasoning="the order was never looked up")
    status = str(lookups[-1].span.output)
    answer = str(ctx.output("answer"))
    found = status in answer
    return Evaluation(
        score=1.0 if found else 0.0,
        reasoning=f"the answer {'repeats' if found else 'does not repeat'} {status!r}",
    )
