"""Which assembled traces are scored: :class:`Sampler`.

A trace with an error (a span whose status is ``ERROR``) is always chosen, unless the
evaluators file says otherwise. Else the first rule that matches the trace's root span (its
name, by a glob pattern; its attributes, or its resource's, by equal values) gives the rate,
and the file's ``sample`` rate applies to the others. A rate is applied to the trace id, as
OpenTelemetry's ratio sampler does: the same trace is chosen by every gateway, and a rate of
0.05 chooses one trace in twenty.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from evaltrace.serve.assembly import PendingTrace
from evaltrace.serve.config import SamplingRule
from evaltrace.serve.otlp import attribute_values, resource_attributes

__all__ = ["Reason", "Sampler", "chosen_by_rate"]

Reason = Literal["error", "rule", "rate"]
"""Why a trace was chosen."""

_SPAN: Final = 2**64


def chosen_by_rate(trace_id: bytes, rate: float) -> bool:
    """Whether a rate chooses ``trace_id``: by its last 8 bytes, random in W3C trace ids.

    Example:
        >>> chosen_by_rate(bytes(8) + (2**63).to_bytes(8, "big"), 0.5)
        False
        >>> chosen_by_rate(bytes(16), 0.01)
        True
    """
    if rate >= 1:
        return True
    if rate <= 0:
        return False
    return int.from_bytes(trace_id[-8:], "big") < rate * _SPAN


class Sampler:
    """Chooses traces to score.

    Args:
        rate: The rate of traces no rule matches.
        rules: Rules by the root span, first match wins.
        errors: Whether a trace with an error is always chosen.
    """

    def __init__(self, *, rate: float, rules: Sequence[SamplingRule], errors: bool) -> None:
        self.rate = rate
        self.rules = list(rules)
        self.errors = errors

    def choose(self, trace: PendingTrace) -> Reason | None:
        """Why ``trace`` is chosen, or ``None`` when it is not."""
        if self.errors and trace.error:
            return "error"
        if self.rules and trace.root is not None:
            root = Span.FromString(trace.root)
            attributes = attribute_values(root.attributes)
            resource = resource_attributes(trace.root_resource)
            for rule in self.rules:
                if _matches(rule, root.name, attributes, resource):
                    return "rule" if chosen_by_rate(trace.trace_id, rule.sample) else None
        return "rate" if chosen_by_rate(trace.trace_id, self.rate) else None


def _matches(
    rule: SamplingRule, name: str, attributes: Mapping[str, Any], resource: Mapping[str, Any]
) -> bool:
    if rule.root_name is not None and not fnmatch.fnmatchcase(name, rule.root_name):
        return False
    for key, wanted in rule.attributes.items():
        found = attributes.get(key, resource.get(key))
        if isinstance(found, tuple):
            found = list(found)
        if found != wanted:
            return False
    return True
