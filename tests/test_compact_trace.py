"""The compact trace trees of the scorecard: made without validation, equal to validated ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaltrace.results.trace_tree import TraceSpan, compact_trace
from evaltrace.trace import load_traces

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def line(span_id: str, parent: str | None, name: str, start: int, **fields: Any) -> str:
    return json.dumps(
        {
            "trace_id": TRACE_ID,
            "span_id": span_id,
            "parent_span_id": parent,
            "name": name,
            "kind": "INTERNAL",
            "start_time_ns": start,
            "end_time_ns": start + 2_500_000,
            "status": fields.get("status", {"code": "OK", "description": None}),
            "attributes": fields.get("attributes", {}),
            "events": fields.get("events", []),
            "resource": {"service.name": "shop"},
        }
    )


def a_trace(tmp_path: Path) -> Path:
    """An agent with a wrap value, a tool that failed, and a model call asking for a tool."""
    long_answer = "é" * 5_000
    spans = [
        line(
            "b7ad6b7169203331",
            None,
            "agent",
            1_000_000_000,
            attributes={
                "openinference.span.kind": "AGENT",
                "input.value": json.dumps({"question": "Où est Paris ?", "n": [1, 2.5]}),
                "input.mime_type": "application/json",
                "output.value": long_answer,
            },
            events=[
                {
                    "name": "evaltrace.wrap",
                    "timestamp_ns": 1_000_000_500,
                    "attributes": {
                        "evaltrace.wrap.name": "plan",
                        "evaltrace.wrap.purpose": "state",
                        "evaltrace.wrap.value": json.dumps({"steps": ["search", "answer"]}),
                    },
                }
            ],
        ),
        line(
            "00f067aa0ba902b7",
            "b7ad6b7169203331",
            "search",
            1_001_000_000,
            status={"code": "ERROR", "description": "KeyError: 'paris'"},
            attributes={"openinference.span.kind": "TOOL", "input.value": "paris"},
            events=[
                {
                    "name": "exception",
                    "timestamp_ns": 1_001_000_100,
                    "attributes": {"exception.type": "KeyError", "exception.message": "'paris'"},
                }
            ],
        ),
        line(
            "00f067aa0ba902b8",
            "b7ad6b7169203331",
            "ChatCompletion",
            1_002_000_000,
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.token_count.prompt": 12,
                "llm.token_count.completion": 7,
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "Be brief.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": "Where is Paris?",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "search",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": (
                    '{"q": "paris"}'
                ),
            },
        ),
    ]
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(spans) + "\n", encoding="utf-8")
    return path


def test_compact_spans_equal_the_spans_validation_makes_of_the_same_fields(
    tmp_path: Path,
) -> None:
    compact = compact_trace(load_traces(a_trace(tmp_path)))

    validated = [TraceSpan.model_validate(span.model_dump()) for span in compact]

    assert compact == validated
    assert [span.model_dump_json(exclude_defaults=True) for span in compact] == [
        span.model_dump_json(exclude_defaults=True) for span in validated
    ]


def test_a_compact_trace_keeps_what_a_reader_looks_at(tmp_path: Path) -> None:
    [agent] = compact_trace(load_traces(a_trace(tmp_path)), text_limit=100)

    assert (agent.name, agent.kind, agent.status, agent.start_ms, agent.duration_ms) == (
        "agent",
        "agent",
        "ok",
        0.0,
        2.5,
    )
    assert agent.input == '{"question":"Où est Paris ?","n":[1,2.5]}'
    assert agent.output == "é" * 100 + "… (4,900 more characters)"
    assert [(v.name, v.purpose, v.value) for v in agent.values] == [
        ("plan", "state", '{"steps":["search","answer"]}')
    ]
    search, chat = agent.children
    assert (search.status, search.error, search.start_ms, search.messages) == (
        "error",
        "KeyError: 'paris'",
        1.0,
        [],
    )
    assert (chat.kind, chat.model, chat.input_tokens, chat.output_tokens) == (
        "llm",
        "gpt-4o-mini",
        12,
        7,
    )
    assert [(m.direction, m.role, m.content, m.tool_calls) for m in chat.messages] == [
        ("in", "system", "Be brief.", []),
        ("in", "user", "Where is Paris?", []),
        ("out", "assistant", None, ['search({"q": "paris"})']),
    ]
