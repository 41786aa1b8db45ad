"""What the app's own model calls spent, read from its captured trace: :func:`app_model_usage`.

Every model call an instrumentor records (OpenInference ``llm.*`` or OpenTelemetry
``gen_ai.*`` attributes) or ``@wrap(kind="llm")`` marks is read as an
:class:`~evaltrace.trace.LLMSpan`; its token counts are added up by model. A model call
nested in another (a ``@wrap(kind="llm")`` function around an instrumented client call) is
one call: only the innermost span of such a chain is counted, the one that reached the
provider. Judge calls never appear here: they are kept out of the app's capture
(:mod:`evaltrace.llm.isolation`) and counted apart (:mod:`evaltrace.llm.usage`).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Mapping
from typing import Final, Self

from pydantic import BaseModel, ConfigDict, Field

from evaltrace.trace import LLMSpan, ObservationNode

__all__ = [
    "UNKNOWN_MODEL",
    "Counts",
    "ModelUsage",
    "add_model_usage",
    "app_model_usage",
    "total_usage",
]

UNKNOWN_MODEL: Final = "(unknown model)"
"""The model a call is counted under when its span names none."""


class Counts(BaseModel):
    """A frozen bag of counts (its fields, every one an ``int``), added up field by field.

    The base of :class:`ModelUsage` and :class:`~evaltrace.llm.JudgeUsage`: tallies keep a
    model's counts as a plain list in field order (:meth:`counts`) and make the model of them
    once, when read (:meth:`from_counts`).

    Example:
        >>> ModelUsage.from_counts([1, 120, 30, 0, 0]).counts()
        (1, 120, 30, 0, 0)
    """

    model_config = ConfigDict(frozen=True)

    @classmethod
    def from_counts(cls, counts: Iterable[int]) -> Self:
        """The model of ``counts``, one per field in the fields' order."""
        return cls(**dict(zip(cls.model_fields, counts, strict=True)))

    def counts(self) -> tuple[int, ...]:
        """The counts, one per field in the fields' order."""
        return tuple(self.__dict__.values())

    def __add__(self, other: Self) -> Self:
        return self.from_counts(map(operator.add, self.counts(), other.counts()))


class ModelUsage(Counts):
    """The app's calls to one model (in one entry, or in a whole run), and their tokens.

    Example:
        >>> a = ModelUsage(calls=1, input_tokens=120, output_tokens=30)
        >>> (a + ModelUsage(calls=2, input_tokens=10)).input_tokens
        130
    """

    model_config = ConfigDict(frozen=True)

    calls: int = Field(default=0, ge=0)
    """Model calls made (spans read as model calls)."""
    input_tokens: int = Field(default=0, ge=0)
    """Prompt tokens, as the spans recorded them (the cached ones included)."""
    output_tokens: int = Field(default=0, ge=0)
    """Completion tokens."""
    cached_tokens: int = Field(default=0, ge=0)
    """Of :attr:`input_tokens`, those read from the provider's prompt cache."""
    calls_without_tokens: int = Field(default=0, ge=0)
    """Of :attr:`calls`, those whose span recorded no token count (their tokens are unknown,
    not zero)."""

    @property
    def total_tokens(self) -> int:
        """Input and output tokens."""
        return self.input_tokens + self.output_tokens


def add_model_usage(
    total: Mapping[str, ModelUsage], more: Mapping[str, ModelUsage]
) -> dict[str, ModelUsage]:
    """The usage of ``total`` and ``more`` added up, model by model.

    Example:
        >>> one = {"m": ModelUsage(calls=1)}
        >>> add_model_usage(one, one)["m"].calls
        2
    """
    summed = dict(total)
    for model, usage in more.items():
        before = summed.get(model)
        summed[model] = usage if before is None else before + usage
    return summed


def total_usage(by_model: Mapping[str, ModelUsage]) -> ModelUsage:
    """Every model's usage added into one.

    Example:
        >>> total_usage({"a": ModelUsage(calls=1), "b": ModelUsage(calls=2)}).calls
        3
    """
    total = ModelUsage()
    for usage in by_model.values():
        total += usage
    return total


def app_model_usage(roots: Iterable[ObservationNode]) -> dict[str, ModelUsage]:
    """The model calls of a trace and their tokens, by model.

    Args:
        roots: The trace (its root nodes).

    Returns:
        One :class:`ModelUsage` per model named by a call (:data:`UNKNOWN_MODEL` for calls
        that name none); empty when the trace holds no model call.
    """
    calls: list[LLMSpan] = []
    nests = False  # whether a model call has spans below it (that may be model calls)
    stack = list(roots)
    # One walk, and the set of ids and reversed order below only for a model call with
    # spans under it: 22.8 us instead of 27.9 us to count a 10-span trace's calls
    # (bench_stored.py's file, median of 7 in one process).
    while stack:
        node = stack.pop()
        children = node.children
        span = node.span
        if isinstance(span, LLMSpan):
            calls.append(span)
            if children:
                nests = True
        if children:
            stack.extend(children)
    if not calls:
        return {}
    if nests:
        calls = _innermost_calls(roots)
    counts: dict[str, list[int]] = {}
    for span in calls:
        usage = span.usage
        model = span.model or UNKNOWN_MODEL
        row = counts.get(model)
        if row is None:
            row = counts[model] = [0, 0, 0, 0, 0]
        row[0] += 1
        if usage.input_tokens is None and usage.output_tokens is None:
            row[4] += 1
            continue
        row[1] += usage.input_tokens or 0
        row[2] += usage.output_tokens or 0
        row[3] += usage.cache_read_tokens or 0
    return {model: _model_usage(*row) for model, row in sorted(counts.items())}


@functools.lru_cache(maxsize=1024)
def _model_usage(
    calls: int, input_tokens: int, output_tokens: int, cached: int, without: int
) -> ModelUsage:
    """The usage of these counts, one frozen instance shared by every trace that has them.

    Traces of one app repeat their counts, and validating a new one was 3.7 of the 11.7 us
    of counting a 10-span trace's calls once its spans are read (bench_stored.py's file).
    """
    return ModelUsage(
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached,
        calls_without_tokens=without,
    )


def _innermost_calls(roots: Iterable[ObservationNode]) -> list[LLMSpan]:
    """The model calls of a trace under which no model call lies.

    A model call nested in another (a ``@wrap(kind="llm")`` function around an instrumented
    client call) is one call: the innermost span stands for it, the one that reached the
    provider.
    """
    order: list[ObservationNode] = []
    stack = list(roots)
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    # Children come after their parent in ``order``: read backwards, a node's children are
    # seen before it, so whether a model call lies below it is known when it is reached.
    below: set[int] = set()
    innermost: list[LLMSpan] = []
    for node in reversed(order):
        inner = False
        for child in node.children:
            if id(child) in below:
                inner = True
                break
        span = node.span
        if not isinstance(span, LLMSpan):
            if inner:
                below.add(id(node))
            continue
        below.add(id(node))
        if not inner:
            innermost.append(span)
    return innermost
