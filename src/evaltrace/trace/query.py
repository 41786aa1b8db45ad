"""A declarative test on a span and the spans around it: :class:`SpanQuery`.

The keys and their meanings are those of pydantic-evals' ``SpanQuery``, so a query written for
it reads the same here, in code or in a dataset file (as the ``query`` of
:class:`~evaltrace.metrics.HasMatchingSpan`). Every key is optional, and the conditions given
must all hold:

* the span itself: ``name_equals``, ``name_contains``, ``name_matches_regex`` (matched from the
  start of the name, as :func:`re.match` does), ``has_attributes``, ``has_attribute_keys``,
  ``has_status``, ``has_kind`` (the OpenInference kind, an evaltrace addition),
  ``min_duration`` and ``max_duration`` (seconds, or a :class:`~datetime.timedelta`; both
  bounds are inclusive);
* combinations: ``not_`` (the query must not match), ``and_`` (every query must match),
  ``or_`` (some query must match; it stands alone at its level);
* the children: ``min_child_count``, ``max_child_count``, ``some_child_has``,
  ``all_children_have``, ``no_child_has``;
* the descendants: ``min_descendant_count``, ``max_descendant_count``,
  ``some_descendant_has``, ``all_descendants_have``, ``no_descendant_has``;
* the ancestors: ``min_depth``, ``max_depth`` (the number of ancestors: a root has depth 0),
  ``some_ancestor_has``, ``all_ancestors_have``, ``no_ancestor_has``;
* ``stop_recursing_when``: the descendant and ancestor conditions of the same level search no
  further than a span matching it (that span is still searched); counts and depth count every
  span.

``all_children_have`` (and the other ``all_`` keys) holds for a span with no children; pair it
with ``min_child_count=1`` to ask for at least one.

A query is a callable ``(node) -> bool`` on an :class:`~evaltrace.trace.ObservationNode`, so it
goes wherever the tree's navigation takes a predicate (``node.first_child(query)``).

Example:
    >>> query = SpanQuery(has_kind="tool", not_=SpanQuery(has_status="error"))
    >>> SpanQuery.model_validate({"has_kind": "tool", "not_": {"has_status": "error"}}) == query
    True
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import timedelta
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    NonNegativeInt,
    PrivateAttr,
    field_validator,
    model_validator,
)

from evaltrace.trace.tree import ObservationNode

__all__ = ["SpanQuery"]


class SpanQuery(BaseModel):
    """Conditions on a span, its children, descendants and ancestors; all given must hold.

    See the module documentation for what each key means.

    Example:
        >>> SpanQuery(name_equals="search", some_ancestor_has=SpanQuery(name_equals="plan"))
        SpanQuery(name_equals='search', some_ancestor_has=SpanQuery(name_equals='plan'))
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name_equals: str | None = None
    """The span's name is exactly this."""
    name_contains: str | None = None
    """The span's name holds this text."""
    name_matches_regex: str | None = None
    """This regular expression matches the span's name from its start (:func:`re.match`)."""
    has_attributes: dict[str, JsonValue] | None = None
    """The span has each of these attributes with this value; a list also matches a sequence
    attribute, and a list or object also matches an attribute holding it as JSON text."""
    has_attribute_keys: list[str] | None = None
    """The span has each of these attributes, whatever their values."""
    has_status: Literal["ok", "error", "unset"] | None = None
    """The span's status."""
    has_kind: str | None = None
    """The span's OpenInference kind, in lower case (``llm``, ``tool``, ``retriever``, ...)."""
    min_duration: timedelta | None = None
    """The span lasted at least this long (seconds, or a timedelta)."""
    max_duration: timedelta | None = None
    """The span lasted at most this long (seconds, or a timedelta)."""

    not_: SpanQuery | None = None
    """This query does not match the span."""
    and_: list[SpanQuery] | None = None
    """Every one of these queries matches the span."""
    or_: list[SpanQuery] | None = Field(default=None, min_length=1)
    """At least one of these queries matches the span; no other key may stand beside it."""

    min_child_count: NonNegativeInt | None = None
    """The span has at least this many children."""
    max_child_count: NonNegativeInt | None = None
    """The span has at most this many children."""
    some_child_has: SpanQuery | None = None
    """At least one child matches this query."""
    all_children_have: SpanQuery | None = None
    """Every child matches this query (true of a span without children)."""
    no_child_has: SpanQuery | None = None
    """No child matches this query."""

    stop_recursing_when: SpanQuery | None = None
    """The descendant and ancestor conditions of this query search no further than a span
    matching this one (that span included)."""

    min_descendant_count: NonNegativeInt | None = None
    """The span has at least this many descendants."""
    max_descendant_count: NonNegativeInt | None = None
    """The span has at most this many descendants."""
    some_descendant_has: SpanQuery | None = None
    """At least one descendant matches this query."""
    all_descendants_have: SpanQuery | None = None
    """Every descendant matches this query (true of a span without children)."""
    no_descendant_has: SpanQuery | None = None
    """No descendant matches this query."""

    min_depth: NonNegativeInt | None = None
    """The span has at least this many ancestors (a root has depth 0)."""
    max_depth: NonNegativeInt | None = None
    """The span has at most this many ancestors."""
    some_ancestor_has: SpanQuery | None = None
    """At least one ancestor matches this query."""
    all_ancestors_have: SpanQuery | None = None
    """Every ancestor matches this query (true of a root)."""
    no_ancestor_has: SpanQuery | None = None
    """No ancestor matches this query."""

    _regex: re.Pattern[str] | None = PrivateAttr(default=None)

    @field_validator("name_matches_regex")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return pattern

    @model_validator(mode="after")
    def _or_stands_alone(self) -> Self:
        if self.or_ is not None and len(self.model_fields_set - {"or_"}) > 0:
            others = ", ".join(sorted(self.model_fields_set - {"or_"}))
            raise ValueError(
                f"'or_' cannot stand beside other conditions ({others}) in one query; put "
                "them in each branch of 'or_', or combine with 'and_': "
                '{"and_": [{"or_": [...]}, {...}]}'
            )
        return self

    def model_post_init(self, context: Any) -> None:
        """Compile the name's regular expression once."""
        if self.name_matches_regex is not None:
            self._regex = re.compile(self.name_matches_regex)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        """The keys given, for ``repr`` (the others are ``None``)."""
        return ((name, value) for name, value in super().__repr_args__() if value is not None)

    def __str__(self) -> str:
        """The query as the JSON a dataset file would hold, durations in seconds."""
        return json.dumps(self._plain(), ensure_ascii=False, separators=(", ", ": "))

    def _plain(self) -> dict[str, Any]:
        plain: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, SpanQuery):
                value = value._plain()
            elif isinstance(value, list) and value and isinstance(value[0], SpanQuery):
                value = [query._plain() for query in value]
            elif isinstance(value, timedelta):
                value = value.total_seconds()
            plain[name] = value
        return plain

    def __call__(self, node: ObservationNode) -> bool:
        """Whether ``node`` (its span and the spans around it) matches this query."""
        return self._matches(node)

    def _matches(self, node: ObservationNode) -> bool:
        if self.or_ is not None:
            return any(query._matches(node) for query in self.or_)
        if self.not_ is not None and self.not_._matches(node):
            return False
        if self.and_ is not None and not all(query._matches(node) for query in self.and_):
            return False
        if not self._span_matches(node):
            return False

        children = node.children
        if not _count_within(len(children), self.min_child_count, self.max_child_count):
            return False
        if not _related(children, self.some_child_has, self.all_children_have, self.no_child_has):
            return False

        stop = self.stop_recursing_when
        if self.min_descendant_count is not None or self.max_descendant_count is not None:
            count = len(node.descendants)
            if not _count_within(count, self.min_descendant_count, self.max_descendant_count):
                return False
        if (
            self.some_descendant_has is not None
            or self.all_descendants_have is not None
            or self.no_descendant_has is not None
        ) and not _related(
            node.find_descendants(_any, stop_recursing_when=stop),
            self.some_descendant_has,
            self.all_descendants_have,
            self.no_descendant_has,
        ):
            return False

        if not _count_within(node.depth, self.min_depth, self.max_depth):
            return False
        return (
            self.some_ancestor_has is None
            and self.all_ancestors_have is None
            and self.no_ancestor_has is None
        ) or _related(
            node.find_ancestors(_any, stop_recursing_when=stop),
            self.some_ancestor_has,
            self.all_ancestors_have,
            self.no_ancestor_has,
        )

    def _span_matches(self, node: ObservationNode) -> bool:
        span = node.span
        if self.name_equals is not None and span.name != self.name_equals:
            return False
        if self.name_contains is not None and self.name_contains not in span.name:
            return False
        if self._regex is not None and self._regex.match(span.name) is None:
            return False
        if self.has_attributes is not None and not all(
            _attribute_matches(span.attributes, key, value)
            for key, value in self.has_attributes.items()
        ):
            return False
        if self.has_attribute_keys is not None and not all(
            key in span.attributes for key in self.has_attribute_keys
        ):
            return False
        if self.has_status is not None and span.status != self.has_status:
            return False
        if self.has_kind is not None and span.kind != self.has_kind.lower():
            return False
        duration = timedelta(milliseconds=span.duration_ms)
        if self.min_duration is not None and duration < self.min_duration:
            return False
        return self.max_duration is None or duration <= self.max_duration


def _any(node: ObservationNode) -> bool:
    return True


def _count_within(count: int, least: int | None, most: int | None) -> bool:
    return (least is None or count >= least) and (most is None or count <= most)


def _related(
    nodes: Iterable[ObservationNode],
    some: SpanQuery | None,
    every: SpanQuery | None,
    none: SpanQuery | None,
) -> bool:
    """Whether ``nodes`` satisfy the ``some_``, ``all_`` and ``no_`` conditions given."""
    if some is None and every is None and none is None:
        return True
    listed = list(nodes)
    if some is not None and not any(some._matches(node) for node in listed):
        return False
    if every is not None and not all(every._matches(node) for node in listed):
        return False
    return none is None or not any(none._matches(node) for node in listed)


def _attribute_matches(attributes: Mapping[str, Any], key: str, expected: JsonValue) -> bool:
    """Whether the attribute ``key`` holds ``expected``.

    OpenTelemetry attributes hold scalars and sequences of scalars only: the SDK stores a list
    as a tuple, and instrumentation stores objects and nested lists as JSON text.
    """
    if key not in attributes:
        return False
    stored = attributes[key]
    if stored == expected:
        return True
    if isinstance(expected, list) and isinstance(stored, tuple):
        return list(stored) == expected
    if isinstance(expected, dict | list) and isinstance(stored, str):
        try:
            return bool(json.loads(stored) == expected)
        except (ValueError, RecursionError):
            return False
    return False
