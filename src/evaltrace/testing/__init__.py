"""Testing support: an offline OpenAI-compatible judge server, an OTLP receiver, the plugin.

Importing this package does not start anything; :class:`FakeJudgeServer` and
:class:`OTLPReceiver` start a server on 127.0.0.1 when entered (``with FakeJudgeServer() as
server: ...``).
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
from evaltrace.testing.otlp_receiver import (
    OTLPReceiver,
    OTLPReceiverStateError,
    ReceivedExport,
    ReceivedSpan,
)
from evaltrace.testing.phoenix import PhoenixError, PhoenixServer

__all__ = [
    "DEFAULT_FLAGGED_WORDS",
    "MODERATION_CATEGORIES",
    "FakeJudgeServer",
    "FakeJudgeStateError",
    "OTLPReceiver",
    "OTLPReceiverStateError",
    "PhoenixError",
    "PhoenixServer",
    "ReceivedExport",
    "ReceivedSpan",
    "RecordedRequest",
    "Rule",
    "ScriptedAnswer",
    "serve_fake_judge",
]
