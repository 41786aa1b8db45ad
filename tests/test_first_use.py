"""What a new user meets first: messages that say how to fix things, and true docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaltrace import Evaluable, NamedData
from evaltrace.judges import ExactMatch, LevenshteinMatch, create_llm_evaluator
from evaltrace.trace import LLMSpan

ROOT = Path(__file__).resolve().parents[1]
ANSWER = Evaluable(eval_output=[NamedData(name="answer", value="Paris")])
WAYS = (
    "expected_output=",
    "evaluables=[Evaluable(expectation=...)]",
    '"expectation" in the dataset',
)


@pytest.mark.anyio
async def test_a_scorer_without_an_expectation_says_how_to_give_one() -> None:
    result = await ExactMatch()(ANSWER)
    assert result.skipped
    for way in WAYS:
        assert way in result.reasoning


@pytest.mark.anyio
async def test_a_judge_template_without_an_expectation_says_how_to_give_one() -> None:
    judge = create_llm_evaluator("correct", "Is {eval_output} the same as {expected_output}?")
    result = await judge(ANSWER)
    assert result.skipped
    for way in WAYS:
        assert way in result.reasoning


@pytest.mark.anyio
async def test_exact_match_reasoning_shows_what_was_compared() -> None:
    case = ANSWER.model_copy(update={"expectation": "paris "})
    result = await ExactMatch()(case)
    assert result.score == 0.0
    assert result.reasoning == "compared output 'Paris' vs expected 'paris '"


@pytest.mark.anyio
async def test_a_local_scorer_shortens_long_values_in_its_reasoning() -> None:
    case = Evaluable(
        eval_output=[NamedData(name="answer", value="x" * 500)],
        expectation={"answer": "y" * 500},
    )
    result = await LevenshteinMatch()(case)
    assert result.status == "scored"
    assert len(result.reasoning) < 200 and result.reasoning.startswith("compared output 'xxx")


def test_the_docs_name_the_real_llm_span_attributes() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    listings = re.findall(r"`LLMSpan` \(([^)]*)\)", text)
    assert listings, "README.md or docs/ should list the attributes of LLMSpan"
    names = {name for listing in listings for name in re.findall(r"`(\w+)`", listing)}
    assert {"input_messages", "output_messages", "usage"} <= names
    for name in names:
        assert hasattr(LLMSpan, name) or name in LLMSpan.__dataclass_fields__, name
