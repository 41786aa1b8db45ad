"""The root span of a run: an SDK span like any other, for the app, its tracer and exporters.

Scenarios with the app's own tracer provider run in a fresh interpreter: the global tracer
provider can be set only once per process.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Span as SDKSpan
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from evaltrace.capture.runspan import RunSpans
from evaltrace.engine import run_captured
from evaltrace.trace import build_trace


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTRACE_", "OTEL_"))}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.anyio
async def test_the_run_span_is_an_sdk_span_the_app_can_annotate() -> None:
    async def app(question: str) -> str:
        span = trace.get_current_span()
        assert isinstance(span, SDKSpan)
        span.set_attribute("app.step", "lookup")
        span.add_event("cache miss", {"key": question})
        return question.upper()

    run = await run_captured(app, "q")

    assert run.error is None
    (node,) = run.trace
    assert node.span.attributes["app.step"] == "lookup"
    assert [(e.name, e.attributes) for e in node.span.record.events] == [
        ("cache miss", {"key": "q"})
    ]


@pytest.mark.anyio
async def test_spans_the_app_starts_are_children_of_the_run_span() -> None:
    tracer = trace.get_tracer("app")

    async def app(question: str) -> str:
        with tracer.start_as_current_span("lookup"):
            await anyio.sleep(0)
        return question

    run = await run_captured(app, "q")

    (node,) = run.trace
    (child,) = node.children
    assert child.span.name == "lookup"
    assert child.span.trace_id == node.span.trace_id
    assert child.span.record.parent_span_id == node.span.span_id


@pytest.mark.anyio
async def test_each_run_starts_a_new_sampled_trace_with_valid_ids() -> None:
    async def app(question: str) -> str:
        return question

    runs = [await run_captured(app, str(i)) for i in range(20)]

    raws = [run.handler.raw_spans[0] for run in runs]
    contexts = [raw.get_span_context() for raw in raws]
    assert all(c is not None and c.is_valid and c.trace_flags.sampled for c in contexts)
    assert len({c.trace_id for c in contexts if c is not None}) == 20
    assert all(raw.parent is None for raw in raws)


@pytest.mark.anyio
async def test_a_run_started_inside_an_app_span_belongs_to_its_trace() -> None:
    tracer = trace.get_tracer("app")

    async def app(question: str) -> str:
        return question

    with tracer.start_as_current_span("request") as outer:
        run = await run_captured(app, "q")

    (raw,) = run.handler.raw_spans
    assert raw.parent is not None
    assert raw.parent.span_id == outer.get_span_context().span_id
    assert raw.get_span_context().trace_id == outer.get_span_context().trace_id


def test_the_apps_exporter_sees_the_run_span_the_capture_holds() -> None:
    result = run_python(
        """
        import anyio
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

        from evaltrace.engine import run_captured

        tracer = trace.get_tracer("app")

        async def answer(question):
            with tracer.start_as_current_span("lookup"):
                pass
            return question.upper()

        run = anyio.run(run_captured, answer, "q")
        exported = {s.name: s for s in exporter.get_finished_spans()}
        captured = {node.span.name: node for node in run.trace[0].walk()}
        assert sorted(exported) == sorted(captured) == ["answer", "lookup"], (exported, captured)
        for name, node in captured.items():
            span = exported[name]
            assert span.context.span_id == node.span.span_id
            assert span.context.trace_id == node.span.trace_id
            assert dict(span.attributes) == node.span.attributes
        assert exported["lookup"].parent.span_id == exported["answer"].context.span_id
        assert exported["answer"].resource is provider.resource
        assert exported["answer"].instrumentation_scope.name == "evaltrace"
        print("OK")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout


def test_the_sampler_of_the_apps_provider_decides_about_the_run_span() -> None:
    result = run_python(
        """
        import anyio
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Decision, Sampler

        asked = []

        class Recording(Sampler):
            def should_sample(self, parent_context, trace_id, name, *args, **kwargs):
                asked.append(name)
                return ALWAYS_ON.should_sample(parent_context, trace_id, name, *args, **kwargs)

            def get_description(self):
                return "recording"

        exporter = InMemorySpanExporter()
        provider = TracerProvider(sampler=Recording())
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

        from evaltrace.engine import run_captured

        async def answer(question):
            return question.upper()

        run = anyio.run(run_captured, answer, "q")
        assert asked == ["answer"], asked
        assert [s.name for s in exporter.get_finished_spans()] == ["answer"]
        assert [s.name for s in run.handler.spans] == ["answer"]
        print("OK")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout


def test_a_root_span_started_by_hand_has_every_field_the_sdk_gives_one() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("evaltrace")
    spans = RunSpans(tracer)
    assert spans.by_hand  # the SDK's defaults: bench_runner.py's c=50 figure needs this path

    by_hand, by_sdk = spans.start("answer"), tracer.start_span("answer")
    for span in (by_hand, by_sdk):
        span.set_attribute("k", "v")
        span.end()

    assert isinstance(by_hand, type(by_sdk))
    lists = {"_events", "_links"}  # made on first use (see below)
    per_span = {"_context", "_lock", "_start_time", "_end_time", "_attributes"}
    hand, sdk = vars(by_hand), vars(by_sdk)
    assert hand.keys() == sdk.keys() - lists
    assert {k: v for k, v in hand.items() if k not in per_span} == {
        k: v for k, v in sdk.items() if k not in per_span | lists
    }
    hand_context, sdk_context = by_hand.get_span_context(), by_sdk.get_span_context()
    assert hand_context.is_valid and hand_context.span_id != sdk_context.span_id
    assert (hand_context.trace_flags, hand_context.trace_state, hand_context.is_remote) == (
        sdk_context.trace_flags,
        sdk_context.trace_state,
        sdk_context.is_remote,
    )
    assert dict(by_hand.attributes or {}) == dict(by_sdk.attributes or {}) == {"k": "v"}
    assert by_hand.attributes is not by_sdk.attributes
    assert (by_hand.events, by_hand.links) == (by_sdk.events, by_sdk.links) == ((), ())
    assert (by_hand.dropped_events, by_hand.dropped_links) == (0, 0)


def test_events_and_links_of_spans_started_by_hand_are_each_their_own() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("evaltrace")
    spans = RunSpans(tracer)
    first, second, other = spans.start("a"), spans.start("b"), tracer.start_span("c")

    first.add_event("one")
    first.add_event("two")
    second.add_link(other.get_span_context(), {"why": "retry"})
    for span in (first, second, other):
        span.end()
    first.add_event("after the end")

    assert [event.name for event in first.events] == ["one", "two"] and first.links == ()
    assert second.events == () and [link.attributes for link in second.links] == [{"why": "retry"}]


def test_root_spans_of_another_sampler_go_through_the_tracer() -> None:
    tracer = TracerProvider(sampler=ALWAYS_OFF).get_tracer("evaltrace")
    spans = RunSpans(tracer)

    assert not spans.by_hand
    assert not spans.start("answer").get_span_context().trace_flags.sampled


@pytest.mark.anyio
async def test_the_tree_of_a_run_of_one_span_is_the_one_build_trace_gives() -> None:
    tracer = trace.get_tracer("app")

    async def app(question: str) -> str:
        return question

    with tracer.start_as_current_span("request"):  # the run span's parent is not captured
        run = await run_captured(app, "q")

    (node,) = run.trace
    assert run.trace == build_trace(run.handler.raw_spans)
    assert node.parent is None and node.children == []
    assert node.span.input == "q" and node.span.output == "q"


@pytest.mark.parametrize(
    ("limit", "kept", "dropped"), [(None, {"a": 1, "b": 2}, 0), (1, {"b": 2}, 1)]
)
def test_processors_see_the_attributes_of_a_span_started_by_hand_and_the_ones_it_dropped(
    limit: int | None, kept: dict[str, int], dropped: int
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=limit))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans = RunSpans(provider.get_tracer("evaltrace"))
    assert spans.by_hand

    span = spans.start("answer")
    span.set_attribute("a", 1)
    span.set_attribute("b", 2)
    span.end()
    span.set_attribute("c", 3)  # ignored: the span has ended

    (exported,) = exporter.get_finished_spans()
    assert dict(exported.attributes or {}) == kept
    assert exported.dropped_attributes == dropped


def test_a_span_started_by_hand_carries_the_resource_the_provider_gave_its_tracers_last() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    tracer = provider.get_tracer("evaltrace")
    spans = RunSpans(tracer)
    spans.start("before").end()

    # What the provider does in a forked child: its tracers get a new resource.
    provider._update_resource(Resource({"process.pid": 42}))
    span = spans.start("after")
    span.end()

    assert span.resource is tracer.resource
    assert span.resource.attributes["process.pid"] == 42
    assert span.resource.attributes["service.name"] == "shop"


@pytest.mark.parametrize("event", [False, True])
def test_processors_receive_from_a_span_started_by_hand_the_copy_the_sdk_makes(
    event: bool,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("evaltrace")
    spans = RunSpans(tracer)
    assert spans.by_hand

    span = spans.start("answer")
    span.set_attribute("app.step", "lookup")
    if event:
        span.add_event("cache miss", {"key": "q"})
    span.end()

    (received,) = exporter.get_finished_spans()
    made = SDKSpan._readable_span(span)  # the copy the SDK's own span class makes
    fields = {k: v for k, v in vars(made).items() if k != "_attributes"}
    assert {k: v for k, v in vars(received).items() if k != "_attributes"} == fields
    assert dict(received.attributes or {}) == dict(made.attributes or {})
    assert received.to_json() == made.to_json()


def _tracked_reachable(start: object, shared: set[int]) -> list[object]:
    """The objects the garbage collector tracks that ``start`` reaches, except ``shared``."""
    found: list[object] = []
    stack = [start]
    seen = set(shared)
    while stack:
        for ref in gc.get_referents(stack.pop()):
            if id(ref) in seen or not gc.is_tracked(ref) or isinstance(ref, type):
                continue
            seen.add(id(ref))
            found.append(ref)
            stack.append(ref)
    return found


@pytest.mark.anyio
async def test_a_run_of_one_span_and_its_tree_keep_eleven_objects_the_collector_tracks() -> None:
    async def app(question: str) -> str:
        return question.upper()

    first = await run_captured(app, "a")
    assert first.trace
    run = await run_captured(app, "b")
    assert run.trace
    gc.collect()  # the collector stops tracking the tuples that hold only numbers

    shared = {id(first)} | {id(o) for o in _tracked_reachable(first, set())}
    kept = _tracked_reachable(run, shared)

    # The outcome, the handler and its lock, its list of spans, the SDK's copy of the span
    # and its context, the tree's list, its node, the node's children, the view and record.
    assert len(kept) + 1 <= 11, sorted(type(o).__name__ for o in kept)
