"""Serving the fake judge in the foreground, as a command does, until SIGINT or SIGTERM."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType

from evaltrace.testing.fake_judge.server import FakeJudgeServer

__all__ = ["serve_in_foreground"]

_STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def serve_in_foreground(judge: FakeJudgeServer, *, announce: Callable[[str], None]) -> None:
    """Start ``judge``, give its base URL to ``announce``, and serve until SIGINT or SIGTERM.

    Either signal stops the server cleanly (its socket closed, its threads joined) and returns;
    the signal handlers in place before are restored. Call it from the main thread, where
    Python runs signal handlers.

    Args:
        judge: A configured server that is not running.
        announce: Called once with the base URL, such as ``http://127.0.0.1:8000/v1``, when
            the server accepts requests.
    """
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {signum: signal.signal(signum, request_stop) for signum in _STOPPING_SIGNALS}
    try:
        with judge:
            announce(judge.base_url)
            stop.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
