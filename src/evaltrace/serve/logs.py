"""The gateway's log: plain lines, or one JSON object per line, on standard error.

Every line has a message; lines about something that happened say what in ``event``
(``listening``, ``forward_failed``, ``scoring_paused``, ``stopped``, ...), with its figures as
more keys, so that a log pipeline can count them: ``--log-format json`` writes
``{"time": ..., "level": "warning", "event": "forward_failed", "message": ..., "spans": 512}``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Final, Literal

__all__ = ["setup_logging"]

_STANDARD: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


class _JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def setup_logging(form: Literal["plain", "json"]) -> None:
    """Send the ``evaltrace`` loggers to standard error, as plain lines or JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    if form == "json":
        handler.setFormatter(_JsonLines())
    else:
        handler.setFormatter(logging.Formatter("evaltrace serve: %(levelname)s: %(message)s"))
    logger = logging.getLogger("evaltrace")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    # aiohttp logs a client that sent nonsense at error level with a traceback; the answer
    # (400) says it, and the counters count it.
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
