"""What ``evaltrace serve`` counts, shown at ``/metrics`` in Prometheus' text format.

Counters only go up; gauges are read when ``/metrics`` is asked for (queue depths, whether
scoring is paused). The intake loop and the scoring thread both count, so each metric has
its lock. The exposition is Prometheus' text format 0.0.4: ``# HELP``, ``# TYPE``, then one
line per label set.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Final

__all__ = ["CONTENT_TYPE", "Counter", "Gauge", "Histogram", "Metrics"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
"""The content type of the exposition."""

_PREFIX: Final = "evaltrace_serve_"
_LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


def _labels(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    if not names:
        return ""
    pairs = ",".join(
        f'{name}="{_escaped(value)}"' for name, value in zip(names, values, strict=True)
    )
    return "{" + pairs + "}"


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Counter:
    """A count that only goes up, per set of label values."""

    def __init__(self, name: str, help_text: str, labels: tuple[str, ...] = ()) -> None:
        self.name = _PREFIX + name
        """The metric's name, with the ``evaltrace_serve_`` prefix."""
        self.help = help_text
        """What it counts."""
        self.labels = labels
        """The names of its labels."""
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()

    def add(self, amount: float = 1, *labels: str) -> None:
        """Add ``amount`` to the count of ``labels`` (one value per label name)."""
        with self._lock:
            self._values[labels] = self._values.get(labels, 0) + amount

    def value(self, *labels: str) -> float:
        """The count of ``labels``."""
        with self._lock:
            return self._values.get(labels, 0)

    def total(self) -> float:
        """The count over every label set."""
        with self._lock:
            return sum(self._values.values())

    def by_label(self) -> dict[tuple[str, ...], float]:
        """Every label set's count."""
        with self._lock:
            return dict(self._values)

    def lines(self) -> Iterable[str]:
        """The metric in the text format."""
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} counter"
        values = self.by_label() or ({} if self.labels else {(): 0.0})
        for labels, value in sorted(values.items()):
            yield f"{self.name}{_labels(self.labels, labels)} {_number(value)}"


class Gauge:
    """A value read when the metrics are shown."""

    def __init__(self, name: str, help_text: str, read: Callable[[], float]) -> None:
        self.name = _PREFIX + name
        """The metric's name."""
        self.help = help_text
        """What it shows."""
        self.read = read
        """Reads the value."""

    def lines(self) -> Iterable[str]:
        """The metric in the text format."""
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} gauge"
        yield f"{self.name} {_number(self.read())}"


class Histogram:
    """How long something took: counts per bucket (cumulative), sum and count."""

    def __init__(
        self, name: str, help_text: str, buckets: tuple[float, ...] = _LATENCY_BUCKETS
    ) -> None:
        self.name = _PREFIX + name
        """The metric's name."""
        self.help = help_text
        """What it measures."""
        self.buckets = buckets
        """The buckets' upper bounds, in seconds."""
        self._counts = [0] * len(buckets)
        self._sum = 0.0
        self._count = 0
        self._lock = threading.Lock()

    def observe(self, seconds: float) -> None:
        """Count one observation of ``seconds``."""
        with self._lock:
            self._sum += seconds
            self._count += 1
            for index, bound in enumerate(self.buckets):
                if seconds <= bound:
                    self._counts[index] += 1
                    break

    @property
    def count(self) -> int:
        """How many observations were made."""
        with self._lock:
            return self._count

    def lines(self) -> Iterable[str]:
        """The metric in the text format."""
        with self._lock:
            counts, total, count = list(self._counts), self._sum, self._count
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} histogram"
        cumulative = 0
        for bound, bucket in zip(self.buckets, counts, strict=True):
            cumulative += bucket
            yield f'{self.name}_bucket{{le="{_number(bound)}"}} {cumulative}'
        yield f'{self.name}_bucket{{le="+Inf"}} {count}'
        yield f"{self.name}_sum {_number(total)}"
        yield f"{self.name}_count {count}"


class Metrics:
    """Every metric of one gateway."""

    def __init__(self) -> None:
        self.requests = Counter(
            "requests_total",
            "Export requests received, by protocol (http, grpc) and the status answered (an "
            "HTTP status, a gRPC status code).",
            ("protocol", "status"),
        )
        """Export requests, by protocol and the status answered."""
        self.spans_received = Counter(
            "spans_received_total", "Spans accepted at intake, by protocol.", ("protocol",)
        )
        """Spans accepted (answered 200 or OK), by protocol: ``http`` or ``grpc``."""
        self.spans_forwarded = Counter(
            "spans_forwarded_total",
            "Spans the forward target accepted, by kind (app spans, evaluation spans).",
            ("kind",),
        )
        """Spans forwarded, by kind: ``app`` or ``evaluation``."""
        self.spans_dropped = Counter(
            "spans_dropped_total", "Spans accepted but never forwarded, by reason.", ("reason",)
        )
        """Spans dropped, by reason."""
        self.forward_retries = Counter(
            "forward_retries_total", "Forward requests sent again after a failure."
        )
        """Forward requests retried."""
        self.spans_not_assembled = Counter(
            "spans_not_assembled_total",
            "Spans forwarded but not assembled: requests waiting for assembly passed its bytes "
            "bound (scoring behind intake).",
        )
        """Spans left out of assembly (forwarded all the same)."""
        self.traces_assembled = Counter(
            "traces_assembled_total", "Traces complete (root ended, then quiet), or timed out."
        )
        """Traces assembled."""
        self.traces_evicted = Counter(
            "traces_evicted_total",
            "Traces dropped from assembly to stay within its bounds (count, bytes).",
        )
        """Traces evicted from assembly."""
        self.traces_sampled = Counter(
            "traces_sampled_total", "Traces the sampler chose, by why.", ("reason",)
        )
        """Traces chosen, by why: ``rate``, ``rule``, ``error``."""
        self.traces_not_scored = Counter(
            "traces_not_scored_total", "Chosen traces not scored, by reason.", ("reason",)
        )
        """Chosen traces that were not scored, by reason."""
        self.traces_scored = Counter(
            "traces_scored_total", "Traces scored, by status.", ("status",)
        )
        """Traces scored, by their entry's status."""
        self.evaluation_latency = Histogram(
            "evaluation_seconds", "Seconds from a trace being chosen to its scores being out."
        )
        """From chosen to scored."""
        self.judge_calls = Counter("judge_calls_total", "Judge requests sent by evaluators.")
        """Judge requests (as the evaluators' results report them)."""
        self.judge_cache_hits = Counter(
            "judge_cache_hits_total", "Judge requests the judge cache answered."
        )
        """Judge cache hits (as the evaluators' results report them)."""
        self.gauges: list[Gauge] = []
        """Values read when shown (queue depths, pauses)."""

    def gauge(self, name: str, help_text: str, read: Callable[[], float]) -> None:
        """Add a gauge read by ``read``."""
        self.gauges.append(Gauge(name, help_text, read))

    def exposition(self) -> str:
        """Every metric in Prometheus' text format."""
        metrics: list[Counter | Histogram | Gauge] = [
            self.requests,
            self.spans_received,
            self.spans_forwarded,
            self.spans_dropped,
            self.forward_retries,
            self.spans_not_assembled,
            self.traces_assembled,
            self.traces_evicted,
            self.traces_sampled,
            self.traces_not_scored,
            self.traces_scored,
            self.evaluation_latency,
            self.judge_calls,
            self.judge_cache_hits,
            *self.gauges,
        ]
        return "\n".join(line for metric in metrics for line in metric.lines()) + "\n"

    def summary(self) -> Mapping[str, object]:
        """The counts a log line reports (at shutdown)."""
        return {
            "spans_received": int(self.spans_received.total()),
            "spans_forwarded": int(self.spans_forwarded.value("app")),
            "evaluation_spans_forwarded": int(self.spans_forwarded.value("evaluation")),
            "spans_dropped": {
                reason: int(count) for (reason,), count in self.spans_dropped.by_label().items()
            },
            "spans_not_assembled": int(self.spans_not_assembled.total()),
            "traces_assembled": int(self.traces_assembled.total()),
            "traces_evicted": int(self.traces_evicted.total()),
            "traces_sampled": int(self.traces_sampled.total()),
            "traces_scored": int(self.traces_scored.total()),
            "traces_not_scored": {
                reason: int(count) for (reason,), count in self.traces_not_scored.by_label().items()
            },
        }
