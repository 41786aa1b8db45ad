"""A customer-support bot for an online outdoor shop, with an order-lookup tool.

The bot sends the customer's message to a chat model with one tool, ``lookup_order``. When the
model calls it, the bot fetches the order from the shop's order service, hands the result back
to the model and returns the model's reply.

What evaltrace sees:

* ``@wrap(kind="agent")`` on :meth:`SupportBot.reply`, ``@wrap(kind="llm")`` on each model call
  and ``@wrap(kind="tool")`` on the tool: one span each, with their inputs and outputs;
* ``wrap(message, purpose="input", name="message")``: the customer's message;
* ``wrap(fetch_order, purpose="input", name="order")``: the order the tool fetched. In a
  dataset run the entry's ``order`` is returned instead and the order service is never called,
  so each entry states exactly which order the bot saw;
* ``wrap(reply, purpose="output", name="reply")``: what the customer reads.

:class:`SupportBotRunnable` is how ``support_chatbot.evaltrace.json`` runs the bot, offline.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import openai
import yaml
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam, ChatCompletionToolParam

from evaltrace import wrap
from evaltrace.judges import configure_judge
from evaltrace.testing import FakeJudgeServer

MODEL = "gpt-4o-mini"
ORDERS_API = os.environ.get("NORTHWIND_ORDERS_API", "https://orders.northwind.example/api")

SYSTEM_PROMPT = """\
You are the customer-support assistant of Northwind Outfitters, an online outdoor shop.
Answer in two or three friendly sentences. When the customer mentions an order number
(NW- followed by four digits), call lookup_order first and answer from what it returns;
never guess an order's status. Policies:
- Returns: unworn items within 30 days of delivery, free of charge; worn items cannot be returned.
- Cancellation: possible until the order ships, from Orders in the customer's account.
- Damaged items: send a photo to support@northwind.example; we refund or replace, the customer
  chooses. Refunds reach the card in 5-7 business days.
"""

LOOKUP_ORDER_TOOL: ChatCompletionToolParam = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Fetch an order: its items, status, carrier, tracking number and dates.",
        "parameters": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "description": "The order number, e.g. NW-1042."}
            },
            "required": ["order_id"],
        },
    },
}

MAX_TOOL_ROUNDS = 3


async def fetch_order(order_id: str) -> dict[str, Any]:
    """The production lookup: the shop's order service over HTTPS."""
    async with httpx.AsyncClient(base_url=ORDERS_API, timeout=10) as client:
        response = await client.get(f"/orders/{order_id}")
        response.raise_for_status()
        order: dict[str, Any] = response.json()
        return order


class SupportBot:
    """The support bot: one chat model and the ``lookup_order`` tool."""

    def __init__(self, client: openai.AsyncOpenAI, model: str = MODEL) -> None:
        self.client = client
        self.model = model

    @wrap(kind="agent")
    async def reply(self, message: str) -> str:
        """Answer one customer message, looking orders up as the model asks."""
        message = wrap(message, purpose="input", name="message")
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": message},
        ]
        answer = (await self.call_model(messages)).choices[0].message
        for _ in range(MAX_TOOL_ROUNDS):
            calls = [call for call in answer.tool_calls or [] if call.type == "function"]
            if not calls:
                break
            messages.append(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.function.name,
                                "arguments": call.function.arguments,
                            },
                        }
                        for call in calls
                    ],
                }
            )
            for call in calls:
                result = await self.run_tool(call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            answer = (await self.call_model(messages)).choices[0].message
        text = answer.content or "Sorry, I could not find an answer; a colleague will email you."
        return wrap(text, purpose="output", name="reply")

    @wrap(kind="llm")
    async def call_model(self, messages: list[ChatCompletionMessageParam]) -> ChatCompletion:
        """One chat completion, offering the tool."""
        return await self.client.chat.completions.create(
            model=self.model, messages=messages, tools=[LOOKUP_ORDER_TOOL], temperature=0.2
        )

    async def run_tool(self, name: str, arguments: str) -> str:
        """Run the tool the model called; the result (or the problem) goes back as JSON."""
        if name != "lookup_order":
            return json.dumps({"error": f"unknown tool {name!r}"})
        order_id = json.loads(arguments).get("order_id", "")
        return json.dumps(await self.lookup_order(order_id))

    @wrap(kind="tool")
    async def lookup_order(self, order_id: str) -> dict[str, Any]:
        """The ``lookup_order`` tool: the order, as the order service has it."""
        return await wrap(fetch_order, purpose="input", name="order")(order_id)


class SupportBotRunnable:
    """Runs the bot for a dataset, offline: a scripted model and a scripted judge on loopback.

    A real deployment points the ``openai`` client at its provider through ``OPENAI_BASE_URL``
    and ``OPENAI_API_KEY``, and evaltrace's judges at theirs through ``EVALTRACE_JUDGE_BASE_URL``,
    ``EVALTRACE_JUDGE_API_KEY`` and ``EVALTRACE_JUDGE_MODEL``; then ``setup`` builds
    ``openai.AsyncOpenAI()`` and starts nothing. Here two FakeJudgeServers stand in: one plays
    the bot's model (``fake_model.yaml``), the other the Factuality judge (``fake_judge.yaml``).
    """

    async def setup(self) -> None:
        """Start the two servers, point the bot and the judge at them."""
        self.model_server = scripted_server("fake_model.yaml")
        self.judge_server = scripted_server("fake_judge.yaml")
        self.judge = configure_judge(
            base_url=self.judge_server.base_url, api_key="offline", model=MODEL
        )
        client = openai.AsyncOpenAI(base_url=self.model_server.base_url, api_key="offline")
        self.bot = SupportBot(client)

    async def run(self, message: str) -> str:
        """Answer one entry's message."""
        return await self.bot.reply(message)

    async def teardown(self) -> None:
        """Close the client, restore the judge configuration, stop both servers."""
        await self.bot.client.close()
        self.judge.restore()
        self.model_server.stop()
        self.judge_server.stop()


def scripted_server(script: str) -> FakeJudgeServer:
    """A started FakeJudgeServer answering by the rules of ``script`` (a YAML list of rules)."""
    rules = yaml.safe_load(Path(__file__).with_name(script).read_text(encoding="utf-8"))
    server = FakeJudgeServer(default_content="Sorry, I can't help with that.").start()
    for rule in rules:
        server.add_rule(**rule)
    return server
