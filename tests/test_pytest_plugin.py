from __future__ import annotations

import inspect
import textwrap

import anyio
import pytest

from evaltrace import capture_traces, wrap
from evaltrace.concurrency.sync import RunningLoopError, run
from evaltrace.errors import EvaltraceError

pytest_plugins = ["pytester"]

APP = """
import anyio
import pytest
import pytest_asyncio

from evaltrace import wrap


@wrap
def answer(question: str) -> str:
    return "4"


@wrap
async def answer_async(question: str) -> str:
    await anyio.sleep(0)
    return answer(question)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def anyio_resource():
    # Set up before evaltrace_capture: the anyio runner task already exists when it runs.
    yield "resource"


@pytest_asyncio.fixture
async def asyncio_resource():
    yield "resource"
"""


@pytest.fixture
def app_tests(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(
        """
        [pytest]
        asyncio_mode = strict
        asyncio_default_fixture_loop_scope = function
        """
    )
    pytester.makeconftest(APP)
    return pytester


def run_tests(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_app=textwrap.dedent(source))
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)


def test_capture_fixture_collects_spans_of_a_sync_test(app_tests: pytest.Pytester) -> None:
    result = run_tests(
        app_tests,
        """
        from conftest import answer

        def test_sync(evaltrace_capture):
            answer("What is 2+2?")
            assert [span.name for span in evaltrace_capture.spans] == ["answer"]
        """,
    )
    result.assert_outcomes(passed=1)


def test_capture_fixture_collects_spans_of_an_anyio_test(app_tests: pytest.Pytester) -> None:
    result = run_tests(
        app_tests,
        """
        import pytest
        from conftest import answer_async

        @pytest.mark.anyio
        async def test_anyio(anyio_resource, evaltrace_capture):
            await answer_async("What is 2+2?")
            assert [span.name for span in evaltrace_capture.spans] == ["answer", "answer_async"]
        """,
    )
    result.assert_outcomes(passed=1)


def test_capture_fixture_collects_spans_of_a_pytest_asyncio_test(
    app_tests: pytest.Pytester,
) -> None:
    result = run_tests(
        app_tests,
        """
        import pytest
        from conftest import answer_async

        @pytest.mark.asyncio
        async def test_asyncio(asyncio_resource, evaltrace_capture):
            await answer_async("What is 2+2?")
            assert [span.name for span in evaltrace_capture.spans] == ["answer", "answer_async"]
        """,
    )
    result.assert_outcomes(passed=1)


def test_capture_fixture_follows_pytest_asyncio_when_it_takes_over_anyio_tests(
    app_tests: pytest.Pytester,
) -> None:
    # In auto mode pytest-asyncio runs every async test, including ones marked anyio.
    result = run_tests(
        app_tests,
        """
        import pytest
        from conftest import answer_async

        @pytest.mark.anyio
        async def test_anyio_marked(evaltrace_capture):
            await answer_async("What is 2+2?")
            assert [span.name for span in evaltrace_capture.spans] == ["answer", "answer_async"]
        """,
        "-o",
        "asyncio_mode=auto",
    )
    result.assert_outcomes(passed=1)


def test_trace_fixture_returns_the_tree_captured_so_far(app_tests: pytest.Pytester) -> None:
    result = run_tests(
        app_tests,
        """
        import pytest
        from conftest import answer, answer_async

        def test_sync(evaltrace_trace):
            assert evaltrace_trace() == []
            answer("What is 2+2?")
            assert [node.span.name for node in evaltrace_trace()] == ["answer"]

        @pytest.mark.anyio
        async def test_anyio(evaltrace_trace):
            await answer_async("What is 2+2?")
            [root] = evaltrace_trace()
            assert root.span.name == "answer_async"
            assert [child.span.name for child in root.children] == ["answer"]

        @pytest.mark.asyncio
        async def test_asyncio(evaltrace_trace, evaltrace_capture):
            await answer_async("What is 2+2?")
            assert evaltrace_trace() == evaltrace_capture.trace
            assert len(evaltrace_trace()) == 1
        """,
    )
    result.assert_outcomes(passed=3)


def test_each_test_gets_a_fresh_capture(app_tests: pytest.Pytester) -> None:
    result = run_tests(
        app_tests,
        """
        import pytest
        from conftest import answer

        @pytest.mark.parametrize("question", ["one", "two", "three"])
        def test_one_call(evaltrace_capture, question):
            answer(question)
            assert len(evaltrace_capture.spans) == 1
        """,
    )
    result.assert_outcomes(passed=3)


def test_capture_fixture_refuses_an_async_test_it_cannot_reach(
    app_tests: pytest.Pytester,
) -> None:
    result = run_tests(
        app_tests,
        """
        async def test_unmarked(evaltrace_capture):
            pass
        """,
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*evaltrace_capture fixture cannot capture for async test "
            "test_app.py::test_unmarked*neither anyio*nor pytest-asyncio*"
            "*async with evaltrace.capture_traces() as handler*"
        ]
    )


def test_run_helper_from_a_sync_test_in_each_kind_of_test_file(
    app_tests: pytest.Pytester,
) -> None:
    result = run_tests(
        app_tests,
        """
        import pytest
        from conftest import answer_async
        from evaltrace.concurrency.sync import RunningLoopError, run

        def test_sync(evaltrace_capture):
            assert run(answer_async("What is 2+2?")) == "4"
            assert len(evaltrace_capture.spans) == 2

        @pytest.mark.anyio
        async def test_anyio(evaltrace_capture):
            with pytest.raises(RunningLoopError):
                run(answer_async("What is 2+2?"))
            assert await answer_async("What is 2+2?") == "4"

        @pytest.mark.asyncio
        async def test_asyncio(evaltrace_capture):
            with pytest.raises(RunningLoopError):
                run(answer_async, "What is 2+2?")
            assert await answer_async("What is 2+2?") == "4"
        """,
    )
    result.assert_outcomes(passed=3)


@wrap
async def double(n: int) -> int:
    await anyio.sleep(0)
    return 2 * n


def test_run_returns_the_result_of_a_coroutine() -> None:
    assert run(double(2)) == 4


def test_run_never_formats_what_the_call_returned() -> None:
    formatted: list[str] = []

    class Huge:  # a run of 10,000 entries takes seconds to repr
        def __repr__(self) -> str:
            formatted.append("repr")
            return "Huge()"

    async def returns_huge() -> Huge:
        return Huge()

    assert isinstance(run(returns_huge()), Huge)
    assert isinstance(run(returns_huge), Huge)
    assert formatted == []


def test_run_calls_an_async_function_with_its_arguments() -> None:
    assert run(double, 3) == 6


def test_run_keeps_the_enclosing_capture() -> None:
    with capture_traces() as handler:
        run(double(1))

    assert [span.name for span in handler.spans] == ["double"]


def test_run_rejects_arguments_with_a_coroutine() -> None:
    coro = double(1)

    with pytest.raises(TypeError, match="coroutine object alone"):
        run(coro, 2)  # type: ignore[call-overload]

    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


@pytest.mark.anyio
async def test_run_refuses_inside_a_running_loop_and_closes_the_coroutine() -> None:
    coro = double(1)

    with pytest.raises(RunningLoopError) as caught:
        run(coro)

    assert str(caught.value) == (
        "evaltrace.run(double(...)) was called while an event loop (asyncio) is running in "
        "this thread, where it cannot start another loop and must not block the running one. "
        "Await the call instead: `await double(...)` (for example in an async test or a "
        "notebook cell)."
    )
    assert isinstance(caught.value, EvaltraceError)
    assert isinstance(caught.value, RuntimeError)
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


@pytest.mark.anyio
async def test_run_refuses_an_async_function_inside_a_running_loop() -> None:
    with pytest.raises(RunningLoopError, match=r"Await the call instead: `await double\(...\)`"):
        run(double, 1)
