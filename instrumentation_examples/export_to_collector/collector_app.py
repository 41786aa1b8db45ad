"""A support bot that looks orders up with a tool, exporting its traces the OpenTelemetry way.

Nothing here configures an exporter: the ``OTEL_*`` variables do (``OTEL_EXPORTER_OTLP_ENDPOINT``
for a collector such as Phoenix, ``EVALTRACE_TRACE_FILE`` for a JSONL file). The bot's model is
evaltrace's offline fake OpenAI server, driven through the real ``openai`` client, scripted to
call the ``lookup_order`` tool and then answer from what the tool returned.

Run it: ``python collector_app.py`` (see README.md for Phoenix).
"""

from __future__ import annotations

import json
from typing import Any

import openai

import evaltrace
from evaltrace.testing import FakeJudgeServer

ORDERS = {"A17": "shipped on Monday", "B42": "waiting for stock"}
QUESTIONS = ["Where is my order A17?", "Where is my order B42?"]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "The status of an order",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]


@evaltrace.wrap(kind="tool")
def lookup_order(order_id: str) -> str:
    return ORDERS.get(order_id, "unknown order")


class Model:
    """The bot's model client, made by :func:`main` (the fake server's address is known then)."""

    client: openai.OpenAI | None = None


@evaltrace.wrap(kind="agent")
def support_bot(question: str) -> str:
    client = Model.client
    assert client is not None, "main() sets the model client"
    question = evaltrace.wrap(question, purpose="input", name="question")
    messages: list[Any] = [
        {"role": "system", "content": "You are a support bot. Look orders up."},
        {"role": "user", "content": question},
    ]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    message = first.choices[0].message
    for call in message.tool_calls or []:
        arguments = json.loads(call.function.arguments)
        status = lookup_order(arguments["order_id"])
        messages += [
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": f"order status: {status}"},
        ]
    final = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    return evaltrace.wrap(final.choices[0].message.content or "", purpose="output", name="answer")


def script(model: FakeJudgeServer) -> None:
    """What the fake model says: look the order up, then answer from the tool's result."""
    model.add_rule("shipped on Monday", content="Your order A17 shipped on Monday.")
    model.add_rule("waiting for stock", content="Your order B42 is waiting for stock.")
    model.add_rule("order A17", tool_call="lookup_order", json={"order_id": "A17"})
    model.add_rule("order B42", tool_call="lookup_order", json={"order_id": "B42"})


def main() -> None:
    # The model calls become LLM spans (OpenInference's openai instrumentor, installed apart).
    evaltrace.init(instrument=["openai"])
    with FakeJudgeServer() as model:
        script(model)
        Model.client = openai.OpenAI(base_url=model.base_url, api_key="offline", max_retries=0)
        for question in QUESTIONS:
            print(support_bot(question))
    evaltrace.flush()


if __name__ == "__main__":
    main()
