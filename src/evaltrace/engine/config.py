"""How a run is made: :class:`RunConfig`, with every default from :mod:`evaltrace.constants`."""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.checks import check_count, check_threshold, check_timeout
from evaltrace.constants import (
    DEFAULT_CONCURRENCY,
    DEFAULT_EPOCH_REDUCER,
    DEFAULT_EPOCHS,
    DEFAULT_THRESHOLD,
)
from evaltrace.evals.selectors import TraceSelector
from evaltrace.judges.strategies import BaseJudgeAggregator, build_aggregation_strategy

__all__ = ["RunConfig"]


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """The settings of one run, checked when made; every way of running takes these.

    Example:
        >>> RunConfig(concurrency=4, timeout=30).threshold
        0.5
        >>> RunConfig(concurrency=0)
        Traceback (most recent call last):
        ...
        ValueError: concurrency must be a whole number >= 1, got 0
    """

    concurrency: int = DEFAULT_CONCURRENCY
    """Most entries in flight at once (in each worker, for an executor with workers)."""
    timeout: float | None = None
    """Seconds allowed for each run of the runnable and for each evaluation; ``None``: no
    limit."""
    threshold: float = DEFAULT_THRESHOLD
    """The score each evaluation must reach for its entry to pass."""
    from_trace: TraceSelector | None = None
    """Selects what to score from each entry's trace; ``None``: :func:`evaltrace.root`."""
    run_id: str | None = None
    """The run's id (and its folder's name); a new one by default."""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    """Attributes of the whole run, given to evaluators (read-only)."""
    epochs: int = DEFAULT_EPOCHS
    """How many times each entry's app is run, each run captured and scored on its own."""
    reducer: str | BaseJudgeAggregator = DEFAULT_EPOCH_REDUCER
    """How an entry's runs are reduced to one evaluation per evaluator: a reducer's name
    (``mean``, ``median``, ``mode``, ``min``, ``max``) or a strategy
    (``AtLeastKAggregationStrategy(k=2)``), as for :class:`~evaltrace.judges.Repeated`."""

    def strategy(self) -> BaseJudgeAggregator:
        """The reducer of an entry's runs."""
        return build_aggregation_strategy(self.reducer)

    @property
    def reducer_name(self) -> str:
        """How records name the reducer."""
        reducer = self.reducer
        return reducer if isinstance(reducer, str) else str(reducer.strategy)

    def __post_init__(self) -> None:
        check_count(self.concurrency, "concurrency")
        check_count(self.epochs, "epochs")
        build_aggregation_strategy(self.reducer)  # a name it does not know is refused here
        check_timeout(self.timeout)
        check_threshold(self.threshold)
        if self.from_trace is not None and not callable(self.from_trace):
            raise TypeError(
                f"from_trace must be a selector such as evaltrace.last_llm_call, got "
                f"{type_name(self.from_trace)} {safe_repr(self.from_trace)[:60]}"
            )
        if self.run_id is not None and not isinstance(self.run_id, str):
            raise TypeError(f"run_id must be a str, got {type_name(self.run_id)}")
        attributes = self.attributes
        if not isinstance(attributes, Mapping):
            raise TypeError(
                "attributes must be a mapping of names to values (e.g. {'dataset': 'qa'}), "
                f"got {type_name(attributes)}"
            )
        for key in attributes:
            if not isinstance(key, str):
                raise TypeError(
                    f"attributes keys must be str, got {type_name(key)} {safe_repr(key)}"
                )
        if not isinstance(attributes, types.MappingProxyType):
            object.__setattr__(self, "attributes", types.MappingProxyType(dict(attributes)))
