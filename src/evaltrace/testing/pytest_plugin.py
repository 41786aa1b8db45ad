"""pytest fixtures for evaltrace, loaded automatically through the ``pytest11`` entry point.

Fixtures:

- ``evaltrace_capture``: a fresh :func:`evaltrace.capture_traces` block around the test,
  yielding its :class:`~evaltrace.MemoryTraceHandler`.
- ``evaltrace_trace``: a callable returning the tree captured so far, to call after the app
  has run (``evaltrace_trace()`` is ``evaltrace_capture.trace``).
- ``fake_judge``: a :class:`~evaltrace.testing.FakeJudgeServer` (an OpenAI-compatible server
  on 127.0.0.1) shared by the session and reset before each test: no rules, no pending faults,
  no recorded requests.

Example:
    >>> def test_answer(evaltrace_capture):  # doctest: +SKIP
    ...     answer("What is 2+2?")
    ...     assert [span.name for span in evaltrace_capture.spans] == ["answer"]

Where the capture is entered, and why. A capture is a context variable, and a test only sees
the variables of the context it runs in. What each runner does (checked by
``tests/test_pytest_plugin.py`` against anyio 4 and pytest-asyncio 1):

- Sync tests run in pytest's own context, as do sync fixtures: the fixture enters the
  capture there.
- pytest-asyncio runs each test in a copy of pytest's context taken just before the test
  starts, so a variable set by a sync fixture is visible: the fixture enters the capture in
  pytest's context, as for sync tests. This also covers tests marked ``anyio`` that
  pytest-asyncio takes over (in its auto mode it runs every async test).
- anyio runs a test, and its async fixtures, inside one long-lived task whose context was
  copied when the task was created, which can be before a sync fixture runs (for example
  when an async fixture was set up first): a sync fixture's variable is then invisible and
  nothing would be captured. For anyio tests the capture is therefore entered by an async
  fixture, which runs in that same task.
- An async test that neither pytest-asyncio nor anyio runs (another plugin's, or one with no
  marker) makes the fixture fail at setup rather than capture nothing; use
  ``async with evaltrace.capture_traces() as handler:`` inside the test instead.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, cast

import pytest

from evaltrace.testing.fake_judge import FakeJudgeServer
from evaltrace.trace import MemoryTraceHandler, capture_traces

if TYPE_CHECKING:
    from evaltrace.trace import ObservationNode

__all__ = ["evaltrace_capture", "evaltrace_trace", "fake_judge"]

_UNKNOWN_RUNNER = (
    "the evaltrace_capture fixture cannot capture for async test {test}: neither anyio "
    "(@pytest.mark.anyio) nor pytest-asyncio (@pytest.mark.asyncio) runs it, and another "
    "runner may run it in a context the fixture cannot reach. Mark the test for one of them, "
    "or capture inside the test: `async with evaltrace.capture_traces() as handler: ...`."
)
_ANYIO_CAPTURE = "_evaltrace_capture_in_anyio_task"


@pytest.fixture
def evaltrace_capture(request: pytest.FixtureRequest) -> Iterator[MemoryTraceHandler]:
    """A fresh ``capture_traces()`` around the test, yielding its handler.

    Works for sync tests, anyio tests and pytest-asyncio tests; see the module docstring
    for how.

    Yields:
        The handler receiving the spans and ``wrap`` values of the runs the test starts.

    Example:
        >>> def test_answer(evaltrace_capture):  # doctest: +SKIP
        ...     answer("What is 2+2?")
        ...     assert evaltrace_capture.spans[0].name == "answer"
    """
    test_function = getattr(request, "function", None)
    if inspect.iscoroutinefunction(test_function) and not _run_by_pytest_asyncio(request):
        if "anyio_backend" not in request.fixturenames:
            pytest.fail(_UNKNOWN_RUNNER.format(test=request.node.nodeid), pytrace=False)
        yield cast(MemoryTraceHandler, request.getfixturevalue(_ANYIO_CAPTURE))
        return
    with capture_traces() as handler:
        yield handler


def _run_by_pytest_asyncio(request: pytest.FixtureRequest) -> bool:
    # pytest-asyncio takes over every test it marks, even one also marked anyio.
    if not request.config.pluginmanager.has_plugin("asyncio"):
        return False
    import pytest_asyncio

    return pytest_asyncio.is_async_test(request.node)


@pytest.fixture
async def _evaltrace_capture_in_anyio_task() -> AsyncIterator[MemoryTraceHandler]:
    """The capture of an anyio test, entered in the task that runs the test."""
    async with capture_traces() as handler:
        yield handler


@pytest.fixture
def evaltrace_trace(
    evaltrace_capture: MemoryTraceHandler,
) -> Callable[[], list[ObservationNode]]:
    """A callable returning the tree captured so far in this test.

    Call it after the app has run: ``evaltrace_trace()`` is ``evaltrace_capture.trace``.

    Example:
        >>> def test_answer(evaltrace_trace):  # doctest: +SKIP
        ...     answer("What is 2+2?")
        ...     assert evaltrace_trace()[0].span.name == "answer"
    """

    def current_trace() -> list[ObservationNode]:
        return evaltrace_capture.trace

    return current_trace


@pytest.fixture(scope="session")
def _evaltrace_fake_judge_session() -> Iterator[FakeJudgeServer]:
    with FakeJudgeServer() as server:
        yield server


@pytest.fixture
def fake_judge(_evaltrace_fake_judge_session: FakeJudgeServer) -> FakeJudgeServer:
    """The session's offline judge server, reset for this test."""
    _evaltrace_fake_judge_session.reset()
    _evaltrace_fake_judge_session.reset_stats()
    return _evaltrace_fake_judge_session
