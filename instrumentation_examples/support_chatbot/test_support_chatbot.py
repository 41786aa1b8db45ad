"""The support chatbot's dataset, run as ``evaltrace test`` runs it: every entry must pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaltrace import load_traces, run_dataset
from evaltrace.results import CompletionStatus
from evaltrace.trace import walk_trace

DATASET = Path(__file__).with_name("support_chatbot.evaltrace.json")


@pytest.mark.anyio
async def test_every_reply_is_factual_and_comes_from_the_expected_lookup(tmp_path: Path) -> None:
    result = await run_dataset(DATASET, output_dir=tmp_path)

    scores = {
        entry.name: {evaluation.evaluator: evaluation.score for evaluation in entry.evaluations}
        for entry in result.entries
    }
    assert scores["where-is-my-order"] == {"Factuality": 1.0, "ToolCallsAsExpected": 1.0}
    # The reply adds the return window: a consistent superset, choice B.
    assert scores["cancel-before-shipping"]["Factuality"] == 0.6
    assert scores["worn-boots-return"]["ToolCallsAsExpected"] == 1.0
    assert {entry.status for entry in result.entries} == {CompletionStatus.SUCCESS}


@pytest.mark.anyio
async def test_the_lookup_returns_the_entrys_order_without_calling_the_order_service(
    tmp_path: Path,
) -> None:
    result = await run_dataset(DATASET, output_dir=tmp_path, entry_filter="late-delivery")

    traces = load_traces(tmp_path / result.run_id / "traces.jsonl")
    [lookup] = [node.span for node in walk_trace(traces) if node.span.kind == "tool"]
    assert lookup.input == {"order_id": "NW-1099"}
    assert lookup.output["delay_reason"] == "backlog at the DHL hub in Leipzig"
    [entry] = result.entries
    assert "Leipzig" in str(entry.output)
