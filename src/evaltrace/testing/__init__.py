"""Testing support: an offline OpenAI-compatible judge server and the pytest plugin.

Importing this package does not start anything; :class:`FakeJudgeServer` starts a server on
127.0.0.1 when entered (``with FakeJudgeServer() as server: ...``).
"""

from evaltrace.testing.fake_judge import (
    DEFAULT_FLAGGED_WORDS,
    MODERATION_CATEGORIES,
    FakeJudgeServer,
    FakeJudgeStateError,
    RecordedRequest,
    Rule,
    ScriptedAnswer,
    serve_fake_judge,
)

__all__ = [
    "DEFAULT_FLAGGED_WORDS",
    "MODERATION_CATEGORIES",
    "FakeJudgeServer",
    "FakeJudgeStateError",
    "RecordedRequest",
    "Rule",
    "ScriptedAnswer",
    "serve_fake_judge",
]
