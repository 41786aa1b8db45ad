"""The intent classifier in front of the shop's support queue: one label per customer message.

Each message gets one of :data:`INTENTS` from a chat model asked for structured output (a JSON
schema whose ``intent`` is an enum of the labels), and is routed to the team for that intent.

What evaltrace sees: ``@wrap(kind="chain")`` on :meth:`IntentClassifier.classify` and
``@wrap(kind="llm")`` on the model call; ``wrap(message, purpose="input", name="message")`` and
``wrap(intent, purpose="output", name="intent")``.

:class:`IntentClassifierRunnable` is how ``intent_classifier.evaltrace.json`` runs it, offline.
"""

from __future__ import annotations

import json
from pathlib import Path

import openai
import yaml
from openai.types.chat import ChatCompletion
from openai.types.shared_params import ResponseFormatJSONSchema

from evaltrace import wrap
from evaltrace.testing import FakeJudgeServer

MODEL = "gpt-4o-mini"
INTENTS = ["order_status", "refund", "cancellation", "product_question"]

SYSTEM_PROMPT = """\
You route messages sent to the support team of Northwind Outfitters, an online outdoor shop.
Give the one intent that fits the message best:
- order_status: where an order is, when it will arrive, delivery problems;
- refund: getting money back for a return or a faulty item;
- cancellation: stopping an order before it ships;
- product_question: sizes, materials, care and use of a product, before or after buying.
"""

RESPONSE_FORMAT: ResponseFormatJSONSchema = {
    "type": "json_schema",
    "json_schema": {
        "name": "intent",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"intent": {"type": "string", "enum": INTENTS}},
            "required": ["intent"],
            "additionalProperties": False,
        },
    },
}


class IntentClassifier:
    """Labels a customer message with its intent."""

    def __init__(self, client: openai.AsyncOpenAI, model: str = MODEL) -> None:
        self.client = client
        self.model = model

    @wrap(kind="chain")
    async def classify(self, message: str) -> str:
        """The message's intent, one of :data:`INTENTS`."""
        message = wrap(message, purpose="input", name="message")
        completion = await self.call_model(message)
        answer = json.loads(completion.choices[0].message.content or "{}").get("intent")
        if answer not in INTENTS:
            raise ValueError(f"the model answered {answer!r}, not one of {INTENTS}")
        intent = str(answer)
        return wrap(intent, purpose="output", name="intent")

    @wrap(kind="llm")
    async def call_model(self, message: str) -> ChatCompletion:
        """One chat completion with the labels as a JSON schema enum."""
        return await self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": message},
            ],
            response_format=RESPONSE_FORMAT,
            temperature=0,
        )


class IntentClassifierRunnable:
    """Runs the classifier for a dataset, offline, with a scripted model on loopback.

    A real deployment points the ``openai`` client at its provider through ``OPENAI_BASE_URL``
    and ``OPENAI_API_KEY`` (``openai.AsyncOpenAI()``) and starts nothing. Here a
    FakeJudgeServer plays the model, answering by the rules of ``fake_model.yaml``. The
    evaluators of this dataset call no judge, so no judge is configured.
    """

    async def setup(self) -> None:
        """Start the scripted model and point the classifier at it."""
        rules = yaml.safe_load(Path(__file__).with_name("fake_model.yaml").read_text("utf-8"))
        self.model_server = FakeJudgeServer().start()
        for rule in rules:
            self.model_server.add_rule(**rule)
        client = openai.AsyncOpenAI(base_url=self.model_server.base_url, api_key="offline")
        self.classifier = IntentClassifier(client)

    async def run(self, message: str) -> str:
        """Classify one entry's message."""
        return await self.classifier.classify(message)

    async def teardown(self) -> None:
        """Close the client and stop the server."""
        await self.classifier.client.close()
        self.model_server.stop()
