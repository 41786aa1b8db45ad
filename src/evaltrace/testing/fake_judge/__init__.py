"""An OpenAI-compatible judge that runs on loopback, so evaluators can be tested offline.

:class:`FakeJudgeServer` is a real HTTP server on ``127.0.0.1``. Point the real ``openai``
client (or anything that speaks the OpenAI wire format, such as autoevals) at its
:attr:`~FakeJudgeServer.base_url` and it answers chat completions, the Responses API,
embeddings and moderations with deterministic, scriptable replies. It can also delay, fail,
rate-limit, hang or garble replies on request, and it records every request it receives.

The server and its script live in ``server``; rules files (YAML or JSON) in ``rules_file``;
serving until SIGINT or SIGTERM, as ``evaltrace fake-llm`` and ``python -m
evaltrace.testing.fake_judge`` do, in ``foreground``; the HTTP layer in ``_httpd``; the OpenAI
wire shapes (requests read, replies built) in ``_wire``; JSON-schema instances for structured
replies in ``_schema_instances``.

Example:
    >>> import openai
    >>> with FakeJudgeServer() as judge:
    ...     _ = judge.add_rule("capital of France", content="Paris")
    ...     client = openai.OpenAI(base_url=judge.base_url, api_key="test")
    ...     reply = client.chat.completions.create(
    ...         model="gpt-4o-mini",
    ...         messages=[{"role": "user", "content": "What is the capital of France?"}],
    ...     )
    >>> reply.choices[0].message.content
    'Paris'
"""

from evaltrace.testing.fake_judge._wire import (
    DEFAULT_FLAGGED_WORDS,
    MODERATION_CATEGORIES,
    Endpoint,
    RequestText,
)
from evaltrace.testing.fake_judge.foreground import serve_in_foreground
from evaltrace.testing.fake_judge.rules_file import RULE_KEYS, RulesFileError, read_rules
from evaltrace.testing.fake_judge.server import (
    FakeJudgeServer,
    FakeJudgeStateError,
    RecordedRequest,
    Rule,
    ScriptedAnswer,
    TextMatch,
    serve_fake_judge,
)

__all__ = [
    "DEFAULT_FLAGGED_WORDS",
    "MODERATION_CATEGORIES",
    "RULE_KEYS",
    "Endpoint",
    "FakeJudgeServer",
    "FakeJudgeStateError",
    "RecordedRequest",
    "RequestText",
    "Rule",
    "RulesFileError",
    "ScriptedAnswer",
    "TextMatch",
    "read_rules",
    "serve_fake_judge",
    "serve_in_foreground",
]
