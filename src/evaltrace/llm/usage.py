"""What judges spent: requests and tokens per model, and what the judge cache answered.

Every judge request goes through evaltrace's judge client
(:mod:`evaltrace.llm.cached_client`), which records it in the collector current in its
context: the engine opens one with :func:`collect_judge_usage` around each entry's
evaluations and saves what it gathered in the entry's result (``judge_usage``), and the run
adds up its entries'. A request answered by the judge cache is a hit and costs nothing; the
tokens its stored answer cost when it was first asked are counted as saved.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token

from pydantic import ConfigDict, Field

from evaltrace.llm.calls import Counts

__all__ = [
    "JudgeUsage",
    "JudgeUsageCollector",
    "add_judge_usage",
    "collect_judge_usage",
    "current_usage_collector",
    "describe_judge_usage",
    "total_judge_usage",
]


class JudgeUsage(Counts):
    """The judge calls of one model (in one entry, or in a whole run).

    Example:
        >>> a = JudgeUsage(requests=1, input_tokens=120, output_tokens=30)
        >>> (a + JudgeUsage(cache_hits=1, saved_input_tokens=120)).cache_hits
        1
    """

    model_config = ConfigDict(frozen=True)

    requests: int = Field(default=0, ge=0)
    """Requests sent to the model's endpoint (the judge cache did not answer them)."""
    input_tokens: int = Field(default=0, ge=0)
    """Prompt tokens of those requests, as the endpoint reported them."""
    output_tokens: int = Field(default=0, ge=0)
    """Completion tokens of those requests."""
    cached_tokens: int = Field(default=0, ge=0)
    """Of :attr:`input_tokens`, those the provider read from its prompt cache (billed
    lower by most providers)."""
    cache_hits: int = Field(default=0, ge=0)
    """Requests the judge cache answered: nothing was sent."""
    cache_misses: int = Field(default=0, ge=0)
    """Requests the judge cache was asked for and did not hold (then sent)."""
    saved_input_tokens: int = Field(default=0, ge=0)
    """Prompt tokens the cache hits did not spend (what their answers cost when asked)."""
    saved_output_tokens: int = Field(default=0, ge=0)
    """Completion tokens the cache hits did not spend."""

    @property
    def saved_tokens(self) -> int:
        """Prompt and completion tokens the cache hits did not spend."""
        return self.saved_input_tokens + self.saved_output_tokens


def add_judge_usage(
    total: Mapping[str, JudgeUsage], more: Mapping[str, JudgeUsage]
) -> dict[str, JudgeUsage]:
    """The usage of ``total`` and ``more`` added up, model by model.

    Example:
        >>> one = {"m": JudgeUsage(requests=1)}
        >>> add_judge_usage(one, one)["m"].requests
        2
    """
    summed = dict(total)
    for model, usage in more.items():
        before = summed.get(model)
        summed[model] = usage if before is None else before + usage
    return summed


def total_judge_usage(by_model: Mapping[str, JudgeUsage]) -> JudgeUsage:
    """Every model's usage added into one.

    Example:
        >>> total_judge_usage({"a": JudgeUsage(requests=1), "b": JudgeUsage(requests=2)}).requests
        3
    """
    total = JudgeUsage()
    for usage in by_model.values():
        total += usage
    return total


def describe_judge_usage(by_model: Mapping[str, JudgeUsage]) -> str | None:
    """One line saying what a run's judges spent and what the judge cache saved.

    Returns:
        The line, or ``None`` when no judge was called.

    Example:
        >>> print(describe_judge_usage({"gpt-4o-mini": JudgeUsage(
        ...     requests=2, input_tokens=1500, output_tokens=90, cached_tokens=1024,
        ...     cache_hits=8, cache_misses=2, saved_input_tokens=6000, saved_output_tokens=360)}))
        judges: 2 requests (1,500 input tokens, 1,024 of them cached; 90 output tokens); cache: 8 hits, 2 misses, 6,360 tokens saved
    """  # noqa: E501
    total = total_judge_usage(by_model)
    if not (total.requests or total.cache_hits):
        return None
    plural = "" if total.requests == 1 else "s"
    line = f"judges: {total.requests:,} request{plural}"
    if total.requests:
        cached = f", {total.cached_tokens:,} of them cached" if total.cached_tokens else ""
        line += (
            f" ({total.input_tokens:,} input tokens{cached}; {total.output_tokens:,} output tokens)"
        )
    if total.cache_hits or total.cache_misses:
        hits = "hit" if total.cache_hits == 1 else "hits"
        misses = "miss" if total.cache_misses == 1 else "misses"
        line += (
            f"; cache: {total.cache_hits:,} {hits}, {total.cache_misses:,} {misses}, "
            f"{total.saved_tokens:,} tokens saved"
        )
    return line


class JudgeUsageCollector:
    """Gathers the judge calls made in a block (:func:`collect_judge_usage`), from any thread.

    It is that block itself: entering it makes it the collector current in the context, and
    leaving it restores the one before. The engine opens one around each entry's
    evaluations; a class rather than a generator, and one object rather than two, made the
    block a third as costly (bench_stored.py, bench/README.md).

    Example:
        >>> collector = JudgeUsageCollector()
        >>> collector.sent("m", input_tokens=10, output_tokens=2, cached_tokens=0, missed=True)
        >>> collector.usage()["m"].cache_misses
        1
    """

    __slots__ = ("_counts", "_lock", "_token")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, list[int]] = {}
        self._token: Token[JudgeUsageCollector | None] | None = None

    def __enter__(self) -> JudgeUsageCollector:
        if self._token is not None:
            raise RuntimeError("a JudgeUsageCollector is entered once at a time")
        self._token = _COLLECTOR.set(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _COLLECTOR.reset(self._token)
            self._token = None

    def _add(self, model: str, pairs: Iterable[tuple[int, int]]) -> None:
        with self._lock:
            counts = self._counts.get(model)
            if counts is None:
                counts = self._counts[model] = [0] * len(JudgeUsage.model_fields)
            for position, amount in pairs:
                counts[position] += amount

    def sent(
        self,
        model: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cached_tokens: int,
        missed: bool,
    ) -> None:
        """Count a request sent to the endpoint, and the tokens its reply reported.

        Args:
            model: The model the request named.
            input_tokens: Its prompt tokens.
            output_tokens: Its completion tokens.
            cached_tokens: Of its prompt tokens, those read from the provider's prompt cache.
            missed: Whether the judge cache was asked first (and did not hold it).
        """
        self._add(model, ((0, 1), (1, input_tokens), (2, output_tokens), (3, cached_tokens)))
        if missed:
            self._add(model, ((5, 1),))

    def hit(self, model: str, *, input_tokens: int, output_tokens: int) -> None:
        """Count a request the judge cache answered, and the tokens its stored answer cost."""
        self._add(model, ((4, 1), (6, input_tokens), (7, output_tokens)))

    def usage(self) -> dict[str, JudgeUsage]:
        """What was gathered so far, by model."""
        if not self._counts:  # no judge call: the entry of a run without judges
            return {}
        with self._lock:
            return {model: JudgeUsage.from_counts(counts) for model, counts in self._counts.items()}


_COLLECTOR: ContextVar[JudgeUsageCollector | None] = ContextVar(
    "evaltrace_judge_usage", default=None
)


def collect_judge_usage() -> AbstractContextManager[JudgeUsageCollector]:
    """Gather the judge calls made in the block (and the tasks and threads it starts).

    Example:
        >>> with collect_judge_usage() as collector:
        ...     current_usage_collector() is collector
        True
    """
    return JudgeUsageCollector()


def current_usage_collector() -> JudgeUsageCollector | None:
    """The collector judge calls made now are counted in, if any."""
    return _COLLECTOR.get()
