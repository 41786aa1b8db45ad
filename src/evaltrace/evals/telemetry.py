"""Evaluation results as telemetry: ``gen_ai.evaluation.result`` in the trace of the run.

With ``init(export_evaluations=True)`` (or ``EVALTRACE_EXPORT_EVALUATIONS=1``) each
evaluation the runner or :func:`~evaltrace.evaluate_traces` makes is emitted following the
OpenTelemetry GenAI semantic conventions' ``gen_ai.evaluation.result`` event:

* ``gen_ai.evaluation.name``: the evaluator's name;
* ``gen_ai.evaluation.score.value``: the score in [0, 1], when it scored;
* ``gen_ai.evaluation.score.label``: the evaluation's :attr:`~evaltrace.Evaluation.label`
  when it gave one, else ``pass`` or ``fail`` (against the run's threshold), ``skipped``
  when the evaluator declined to score;
* ``gen_ai.evaluation.explanation``: the evaluator's reasoning, when it gave one;
* ``error.type``: the error's type, when the evaluation errored.

The conventions ask for the event to be parented to the span it evaluates. That span has
ended (and may have been exported by another process, for a stored trace), and a span event
can only be added to a live span; a log-based event would reach only collectors that take
logs (Phoenix takes traces only). So each evaluation is a short span of its own, named
``evaluation <name>``, a child of the evaluated run's root span (same trace id, its parent
span id the root's), carrying the event and the same attributes, with the OpenInference kind
``EVALUATOR``: any trace exporter delivers it, and a collector shows it inside the run.

These spans belong to no capture, and the judge calls made by evaluators stay out of the
app's trace (unless ``configure_judge(trace_judge_calls=True)``).

:func:`evaluation_spans` builds the same spans as data, without a tracer, under the resource
of the trace they evaluate: ``evaltrace serve`` encodes them and forwards them with the
trace's own spans, so that a collector that groups spans by resource (Phoenix's projects)
files them with the run.

A run's statistics are known at its end only, after every entry's evaluations went out. They
are emitted then (:func:`export_run_statistics`), in a trace of their own: a root span
``evaluation run <run>`` and under it, per evaluator, a span ``evaluation statistics <name>``
carrying a ``gen_ai.evaluation.result`` event whose ``gen_ai.evaluation.score.value`` is the
mean score, with the interval, ``n``, standard error and pass rate as extra attributes
``evaltrace.statistics.<figure>`` (``evaltrace.statistics.mean.low``, ...) and the run's name
and id (``evaltrace.statistics.run``, ``evaltrace.statistics.run_id``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, TraceFlags

from evaltrace._safe_text import exception_text
from evaltrace.capture import conventions as conv
from evaltrace.capture.config import runtime, settings
from evaltrace.capture.context import outside_captures
from evaltrace.constants import DEFAULT_THRESHOLD
from evaltrace.evals.evaluation import Evaluation
from evaltrace.trace.tree import ObservationNode

__all__ = [
    "EVALUATION_SPAN_KIND",
    "evaluation_attributes",
    "evaluation_spans",
    "export_evaluations",
    "export_run_statistics",
]

logger = logging.getLogger("evaltrace")

EVALUATION_SPAN_KIND: Final = "EVALUATOR"
"""The OpenInference span kind of an evaluation's span."""

_SAMPLED: Final = TraceFlags(TraceFlags.SAMPLED)
_SCOPE: Final = InstrumentationScope("evaltrace")
_warned = False


def evaluation_attributes(
    evaluation: Evaluation, *, threshold: float = DEFAULT_THRESHOLD
) -> dict[str, Any]:
    """The attributes of the ``gen_ai.evaluation.result`` event of ``evaluation``.

    Example:
        >>> evaluation_attributes(Evaluation(score=0.8, reasoning="close", evaluator="F1"))
        ... # doctest: +NORMALIZE_WHITESPACE
        {'gen_ai.evaluation.name': 'F1', 'gen_ai.evaluation.score.value': 0.8,
         'gen_ai.evaluation.score.label': 'pass', 'gen_ai.evaluation.explanation': 'close'}
    """
    attributes: dict[str, Any] = {conv.GEN_AI_EVALUATION_NAME: evaluation.evaluator or "evaluator"}
    if evaluation.score is not None:
        attributes[conv.GEN_AI_EVALUATION_SCORE_VALUE] = evaluation.score
        label = "pass" if evaluation.passed(threshold) else "fail"
        attributes[conv.GEN_AI_EVALUATION_SCORE_LABEL] = evaluation.label or label
    elif evaluation.label is not None:
        attributes[conv.GEN_AI_EVALUATION_SCORE_LABEL] = evaluation.label
    elif evaluation.skipped:
        attributes[conv.GEN_AI_EVALUATION_SCORE_LABEL] = "skipped"
    if evaluation.reasoning:
        attributes[conv.GEN_AI_EVALUATION_EXPLANATION] = evaluation.reasoning
    if evaluation.error is not None:
        attributes[conv.ERROR_TYPE] = evaluation.error.type
    return attributes


def export_evaluations(
    evaluations: Sequence[Evaluation],
    trace: Sequence[ObservationNode],
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> None:
    """Emit ``evaluations`` in the trace they scored, when evaluations are exported.

    Does nothing unless ``init(export_evaluations=True)`` (or ``EVALTRACE_EXPORT_EVALUATIONS``)
    is in effect, or when ``trace`` is empty. Never raises: a failure is logged once.

    Args:
        evaluations: One entry's evaluations.
        trace: The entry's trace (its roots); the spans are children of the first root.
        threshold: The score that passes, for the ``pass``/``fail`` label.
    """
    global _warned
    current = settings()
    if not current.export_evaluations or current.disabled or not trace or not evaluations:
        return
    try:
        _emit(evaluations, trace[0], threshold)
    except Exception as exc:  # telemetry never breaks an evaluation run
        if not _warned:
            _warned = True
            logger.warning(
                "evaltrace: evaluation results could not be exported: %s", exception_text(exc)
            )


def evaluation_spans(
    evaluations: Sequence[Evaluation],
    root: ObservationNode,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    resource: Mapping[str, Any] | None = None,
) -> list[ReadableSpan]:
    """The spans that carry ``evaluations`` into the trace of ``root``, built as data.

    The same spans :func:`export_evaluations` emits (named ``evaluation <name>``, children of
    ``root``, each with its ``gen_ai.evaluation.result`` event), made without a tracer, for
    whoever sends them on: any OpenTelemetry span exporter, or the SDK's OTLP encoder.

    Args:
        evaluations: One entry's evaluations.
        root: The root of the evaluated trace; the spans are its children.
        threshold: The score that passes, for the ``pass``/``fail`` label.
        resource: The attributes of the resource the spans are filed under; by default the
            evaluated span's own, so that they land with the trace they evaluate.

    Example:
        >>> from evaltrace.trace import SpanRecord, build_trace
        >>> roots = build_trace([SpanRecord(trace_id=1, span_id=2, name="ask",
        ...                                 start_time_ns=0, end_time_ns=5)])
        >>> [span.name for span in evaluation_spans([Evaluation(score=1.0, evaluator="F1")],
        ...                                          roots[0])]
        ['evaluation F1']
    """
    evaluated = root.span
    parent = SpanContext(
        trace_id=evaluated.trace_id, span_id=evaluated.span_id, is_remote=True, trace_flags=_SAMPLED
    )
    attributes_of = evaluated.record.resource_attributes if resource is None else resource
    filed_under = Resource(dict(attributes_of))
    spans = []
    for evaluation in evaluations:
        attributes = evaluation_attributes(evaluation, threshold=threshold)
        now = time.time_ns()
        context = SpanContext(
            trace_id=evaluated.trace_id,
            span_id=random.getrandbits(64) or 1,
            is_remote=False,
            trace_flags=_SAMPLED,
        )
        spans.append(
            ReadableSpan(
                name=f"evaluation {attributes[conv.GEN_AI_EVALUATION_NAME]}",
                context=context,
                parent=parent,
                resource=filed_under,
                attributes={conv.SPAN_KIND: EVALUATION_SPAN_KIND, **attributes},
                events=[Event(conv.GEN_AI_EVALUATION_RESULT_EVENT, attributes, timestamp=now)],
                kind=SpanKind.INTERNAL,
                status=_status(evaluation),
                start_time=now,
                end_time=now,
                instrumentation_scope=_SCOPE,
            )
        )
    return spans


def _status(evaluation: Evaluation) -> Status:
    if evaluation.error is None:
        return Status(otel_trace.StatusCode.UNSET)
    return Status(
        otel_trace.StatusCode.ERROR, f"{evaluation.error.type}: {evaluation.error.message}"
    )


def _emit(evaluations: Sequence[Evaluation], root: ObservationNode, threshold: float) -> None:
    evaluated = root.span
    parent = NonRecordingSpan(
        SpanContext(
            trace_id=evaluated.trace_id,
            span_id=evaluated.span_id,
            is_remote=True,
            trace_flags=_SAMPLED,
        )
    )
    context = otel_trace.set_span_in_context(parent)
    tracer = runtime().tracer
    with outside_captures():
        for evaluation in evaluations:
            attributes = evaluation_attributes(evaluation, threshold=threshold)
            span = tracer.start_span(
                f"evaluation {attributes[conv.GEN_AI_EVALUATION_NAME]}",
                context=context,
                kind=SpanKind.INTERNAL,
                attributes={conv.SPAN_KIND: EVALUATION_SPAN_KIND, **attributes},
            )
            span.add_event(conv.GEN_AI_EVALUATION_RESULT_EVENT, attributes)
            if evaluation.error is not None:
                span.set_status(_status(evaluation))
            span.end()


def export_run_statistics(run: str, run_id: str, evaluators: Sequence[Mapping[str, Any]]) -> None:
    """Emit a run's statistics, one ``gen_ai.evaluation.result`` event per evaluator.

    Does nothing unless evaluations are exported (as :func:`export_evaluations`). Never
    raises: a failure is logged once.

    Args:
        run: The run's name.
        run_id: The run's id.
        evaluators: The attributes of each evaluator's event: ``gen_ai.evaluation.name``, the
            mean as ``gen_ai.evaluation.score.value``, and ``evaltrace.statistics.*``.
    """
    global _warned
    current = settings()
    if not current.export_evaluations or current.disabled or not evaluators:
        return
    try:
        _emit_run(run, run_id, evaluators)
    except Exception as exc:  # telemetry never breaks an evaluation run
        if not _warned:
            _warned = True
            logger.warning(
                "evaltrace: evaluation results could not be exported: %s", exception_text(exc)
            )


def _emit_run(run: str, run_id: str, evaluators: Sequence[Mapping[str, Any]]) -> None:
    tracer = runtime().tracer
    identity = {conv.STATISTICS_RUN: run, conv.STATISTICS_RUN_ID: run_id}
    with outside_captures():
        root = tracer.start_span(
            f"evaluation run {run}",
            context=otel_context.Context(),  # a trace of its own, whatever span is current
            kind=SpanKind.INTERNAL,
            attributes={conv.SPAN_KIND: EVALUATION_SPAN_KIND, **identity},
        )
        context = otel_trace.set_span_in_context(root)
        for figures in evaluators:
            attributes = {**figures, **identity}
            span = tracer.start_span(
                f"evaluation statistics {attributes.get(conv.GEN_AI_EVALUATION_NAME, 'evaluator')}",
                context=context,
                kind=SpanKind.INTERNAL,
                attributes={conv.SPAN_KIND: EVALUATION_SPAN_KIND, **attributes},
            )
            span.add_event(conv.GEN_AI_EVALUATION_RESULT_EVENT, attributes)
            span.end()
        root.end()
