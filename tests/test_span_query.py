"""SpanQuery and the navigation of the trace tree, on traces captured from real ``@wrap`` apps.

A span query keeps the keys and meanings of pydantic-evals' ``SpanQuery``: conditions on the
span itself (name, attributes, status, duration), on its children, descendants and ancestors,
combined with ``not_``, ``and_`` and ``or_``.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from pydantic import ValidationError

from evaltrace import capture_traces, wrap
from evaltrace.trace import ObservationNode, SpanQuery, walk_trace


@wrap(kind="retriever")
def search(question: str) -> list[str]:
    return ["Paris is the capital of France.", "Lyon is in France."]


@wrap(kind="tool")
def weather(city: str) -> str:
    raise ConnectionError("weather service down")


@wrap(kind="tool")
def slow_lookup(city: str) -> str:
    time.sleep(0.06)
    return "sunny"


@wrap(kind="llm")
def generate(question: str, documents: list[str]) -> str:
    return "Paris"


@wrap
def plan(question: str) -> list[str]:
    return [generate(question, search(question))]


@wrap
def answer(question: str) -> str:
    steps = plan(question)
    try:
        weather("Paris")
    except ConnectionError:
        pass
    slow_lookup("Paris")
    return steps[0]


def captured() -> list[ObservationNode]:
    """answer -> (plan -> (search, generate)), weather (error), slow_lookup (60 ms)."""
    with capture_traces() as handler:
        answer("What is the capital of France?")
    return handler.trace


@pytest.fixture(scope="module")
def trace() -> list[ObservationNode]:
    return captured()


def matching(trace: list[ObservationNode], **query: object) -> list[str]:
    spans_query = SpanQuery.model_validate(query)
    return [node.span.name for node in walk_trace(trace) if spans_query(node)]


def node_named(trace: list[ObservationNode], name: str) -> ObservationNode:
    return next(node for node in walk_trace(trace) if node.span.name == name)


# --- the span itself ----------------------------------------------------------------------------


def test_an_empty_query_matches_every_span(trace: list[ObservationNode]) -> None:
    assert len(matching(trace)) == 6


def test_name_equals_contains_and_regex(trace: list[ObservationNode]) -> None:
    assert matching(trace, name_equals="search") == ["search"]
    assert matching(trace, name_contains="e") == ["answer", "search", "generate", "weather"]
    assert matching(trace, name_matches_regex="s") == ["search", "slow_lookup"]


def test_a_name_regex_matches_from_the_start_of_the_name(trace: list[ObservationNode]) -> None:
    assert matching(trace, name_matches_regex="earch") == []
    assert matching(trace, name_matches_regex=".*earch") == ["search"]


def test_has_attributes_compares_values_and_has_attribute_keys_presence(
    trace: list[ObservationNode],
) -> None:
    assert matching(trace, has_attributes={"openinference.span.kind": "TOOL"}) == [
        "weather",
        "slow_lookup",
    ]
    assert matching(trace, has_attribute_keys=["output.value"]) == [
        "answer",
        "plan",
        "search",
        "generate",
        "slow_lookup",
    ]


def test_has_attributes_matches_a_list_or_dict_against_its_json_text(
    trace: list[ObservationNode],
) -> None:
    documents = ["Paris is the capital of France.", "Lyon is in France."]
    assert matching(trace, has_attributes={"output.value": documents}) == ["search"]
    assert matching(trace, has_attributes={"input.value": {"city": "Paris"}}) == [
        "weather",
        "slow_lookup",
    ]


def test_has_status_and_has_kind(trace: list[ObservationNode]) -> None:
    assert matching(trace, has_status="error") == ["weather"]
    assert matching(trace, has_kind="tool") == ["weather", "slow_lookup"]


def test_duration_bounds_take_seconds_or_a_timedelta(trace: list[ObservationNode]) -> None:
    assert matching(trace, min_duration=0.05) == ["answer", "slow_lookup"]
    assert matching(trace, min_duration=timedelta(milliseconds=50), max_duration=10) == [
        "answer",
        "slow_lookup",
    ]
    assert "slow_lookup" not in matching(trace, max_duration=0.05)


# --- combining ----------------------------------------------------------------------------------


def test_not_and_or_combine_conditions(trace: list[ObservationNode]) -> None:
    assert matching(trace, has_kind="tool", not_={"has_status": "error"}) == ["slow_lookup"]
    assert matching(trace, and_=[{"name_contains": "a"}, {"name_contains": "n"}]) == [
        "answer",
        "plan",
        "generate",
    ]
    assert matching(trace, or_=[{"name_equals": "plan"}, {"has_status": "error"}]) == [
        "plan",
        "weather",
    ]


def test_or_with_other_conditions_at_its_level_is_refused() -> None:
    with pytest.raises(ValidationError, match="or_"):
        SpanQuery.model_validate({"or_": [{"name_equals": "a"}], "name_contains": "b"})


def test_a_bad_name_regex_is_refused_when_the_query_is_made() -> None:
    with pytest.raises(ValidationError, match="name_matches_regex"):
        SpanQuery(name_matches_regex="(unclosed")


def test_an_unknown_key_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError, match="name_equal"):
        SpanQuery.model_validate({"name_equal": "search"})


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValidationError, match="min_child_count"):
        SpanQuery(min_child_count=-1)


# --- children, descendants, ancestors -----------------------------------------------------------


def test_child_counts_and_child_conditions(trace: list[ObservationNode]) -> None:
    assert matching(trace, min_child_count=2) == ["answer", "plan"]
    assert matching(trace, max_child_count=0) == ["search", "generate", "weather", "slow_lookup"]
    assert matching(trace, some_child_has={"has_kind": "retriever"}) == ["plan"]
    assert matching(trace, min_child_count=1, all_children_have={"has_kind": "tool"}) == []
    assert matching(trace, min_child_count=1, no_child_has={"has_status": "error"}) == ["plan"]


def test_descendant_counts_and_conditions(trace: list[ObservationNode]) -> None:
    assert matching(trace, min_descendant_count=5) == ["answer"]
    assert matching(trace, some_descendant_has={"name_equals": "generate"}) == ["answer", "plan"]
    assert matching(trace, min_child_count=1, no_descendant_has={"has_status": "error"}) == ["plan"]
    assert matching(
        trace, min_child_count=1, all_descendants_have={"has_attribute_keys": ["input.value"]}
    ) == ["answer", "plan"]


def test_stop_recursing_when_prunes_the_descendants_searched(
    trace: list[ObservationNode],
) -> None:
    below_plan = {"some_descendant_has": {"name_equals": "search"}}
    assert matching(trace, **below_plan) == ["answer", "plan"]
    pruned = {**below_plan, "stop_recursing_when": {"name_equals": "plan"}}
    assert matching(trace, **pruned) == ["plan"]


def test_depth_and_ancestor_conditions(trace: list[ObservationNode]) -> None:
    assert matching(trace, max_depth=0) == ["answer"]
    assert matching(trace, min_depth=2) == ["search", "generate"]
    assert matching(trace, some_ancestor_has={"name_equals": "plan"}) == ["search", "generate"]
    assert matching(trace, min_depth=1, all_ancestors_have={"has_kind": "chain"}) == [
        "plan",
        "search",
        "generate",
        "weather",
        "slow_lookup",
    ]
    assert matching(trace, min_depth=1, no_ancestor_has={"name_equals": "plan"}) == [
        "plan",
        "weather",
        "slow_lookup",
    ]


def test_stop_recursing_when_stops_the_walk_up_at_the_first_match(
    trace: list[ObservationNode],
) -> None:
    query = {"some_ancestor_has": {"name_equals": "answer"}}
    assert "search" in matching(trace, **query)
    pruned = {**query, "stop_recursing_when": {"name_equals": "plan"}}
    assert "search" not in matching(trace, **pruned)
    assert "plan" in matching(trace, **pruned)


def test_a_query_made_in_code_equals_the_same_query_from_a_dict() -> None:
    made = SpanQuery(name_equals="search", some_ancestor_has=SpanQuery(name_equals="plan"))
    read = SpanQuery.model_validate(
        {"name_equals": "search", "some_ancestor_has": {"name_equals": "plan"}}
    )
    assert made == read


# --- ObservationNode navigation -----------------------------------------------------------------


def test_each_node_knows_its_parent_and_a_root_has_none(trace: list[ObservationNode]) -> None:
    search_node = node_named(trace, "search")
    assert search_node.parent is not None and search_node.parent.span.name == "plan"
    assert trace[0].parent is None


def test_ancestors_run_from_the_parent_up_to_the_root(trace: list[ObservationNode]) -> None:
    search_node = node_named(trace, "search")
    assert [node.span.name for node in search_node.ancestors] == ["plan", "answer"]
    assert search_node.depth == 2


def test_descendants_are_every_node_below_depth_first(trace: list[ObservationNode]) -> None:
    assert [node.span.name for node in trace[0].descendants] == [
        "plan",
        "search",
        "generate",
        "weather",
        "slow_lookup",
    ]


def test_child_helpers_take_a_query_or_any_predicate(trace: list[ObservationNode]) -> None:
    root = trace[0]
    tools = SpanQuery(has_kind="tool")
    assert [node.span.name for node in root.find_children(tools)] == ["weather", "slow_lookup"]
    first = root.first_child(tools)
    assert first is not None and first.span.name == "weather"
    assert root.any_child(lambda node: node.span.name == "plan")
    assert root.first_child(SpanQuery(name_equals="search")) is None


def test_descendant_helpers_stop_recursing_below_a_match(trace: list[ObservationNode]) -> None:
    root = trace[0]
    llm = SpanQuery(has_kind="llm")
    found = root.first_descendant(llm)
    assert found is not None and found.span.name == "generate"
    assert not root.any_descendant(llm, stop_recursing_when=SpanQuery(name_equals="plan"))
    assert [n.span.name for n in root.find_descendants(SpanQuery(name_contains="l"))] == [
        "plan",
        "slow_lookup",
    ]


def test_ancestor_helpers_find_the_closest_first(trace: list[ObservationNode]) -> None:
    generate_node = node_named(trace, "generate")
    chain = SpanQuery(has_kind="chain")
    closest = generate_node.first_ancestor(chain)
    assert closest is not None and closest.span.name == "plan"
    assert [n.span.name for n in generate_node.find_ancestors(chain)] == ["plan", "answer"]
    assert not generate_node.any_ancestor(
        SpanQuery(name_equals="answer"), stop_recursing_when=SpanQuery(name_equals="plan")
    )


def test_a_node_made_by_hand_is_the_parent_of_the_children_it_is_given(
    trace: list[ObservationNode],
) -> None:
    leaf = ObservationNode(span=node_named(trace, "search").span)
    made = ObservationNode(span=trace[0].span, children=[leaf])
    assert leaf.parent is made
