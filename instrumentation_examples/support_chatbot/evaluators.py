"""The support bot's own evaluator: did it call the tools the entry expects, with those arguments?

Factuality judges what the customer reads; this checks how the bot got there. A reply can be
right by luck (the model guessed "shipped") while the bot never looked the order up, and that
is a bug to catch before a guess is wrong.
"""

from __future__ import annotations

import json
from typing import Any

from evaltrace import Evaluation, Evaluator, EvaluatorContext
from evaltrace.trace import walk_trace


class ToolCallsAsExpected(Evaluator):
    """Compare the tool calls in the run's trace with ``eval_metadata["expected_tool_calls"]``.

    Each expected call is ``{"name": ..., "arguments": {...}}``; an empty list means the bot
    should answer without tools. The tool calls are the run's ``@wrap(kind="tool")`` spans,
    with their arguments. The score is the share of calls that match, over the expected and
    made calls together (a missing call and an extra call both count against it); 1.0 when the
    bot made exactly the expected calls.
    """

    def evaluate(self, ctx: EvaluatorContext) -> Evaluation:
        """Score one entry."""
        expected: Any = ctx.metadata.get("expected_tool_calls")
        if not isinstance(expected, list):
            return Evaluation.skip("the entry has no eval_metadata.expected_tool_calls list")
        made = [
            {"name": node.span.name, "arguments": node.span.input or {}}
            for node in walk_trace(ctx.trace or [])
            if node.span.kind == "tool"
        ]
        unmatched = list(made)
        missing = []
        for call in expected:
            if call in unmatched:
                unmatched.remove(call)
            else:
                missing.append(call)
        considered = max(len(expected), len(made))
        score = 1.0 if considered == 0 else (len(expected) - len(missing)) / considered
        problems = [f"missing {_shown(call)}" for call in missing]
        problems += [f"unexpected {_shown(call)}" for call in unmatched]
        reasoning = "; ".join(problems) or (
            "called " + ", ".join(_shown(call) for call in made) if made else "called no tool"
        )
        return Evaluation(score=score, reasoning=reasoning, details={"made": made})


def _shown(call: dict[str, Any]) -> str:
    return f"{call['name']}({json.dumps(call['arguments'], sort_keys=True)})"
