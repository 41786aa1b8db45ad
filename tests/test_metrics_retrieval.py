"""Retrieval metrics on hand-worked examples (the arithmetic is in the comments)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from evaltrace.errors import ConfigurationError
from evaltrace.metrics import (
    DocumentKeyError,
    DocumentScoreError,
    EmptyGroundTruthWarning,
    average_precision,
    check_document_key,
    document_key,
    ndcg,
    recall,
    reciprocal_rank,
)

ALL_METRICS: list[Callable[..., float]] = [recall, reciprocal_rank, average_precision, ndcg]


# recall


def test_single_hit_recall_is_one_when_any_relevant_document_is_retrieved() -> None:
    assert recall(["x", "b"], ["a", "b"], mode="single_hit") == 1.0


def test_single_hit_recall_is_the_default_mode() -> None:
    assert recall(["x", "b"], ["a", "b", "c"]) == 1.0


def test_multi_hit_recall_is_the_share_of_relevant_documents_found() -> None:
    # found {a, b} of {a, b, c, d}: 2 / 4
    assert recall(["a", "x", "b"], ["a", "b", "c", "d"], mode="multi_hit") == 0.5


def test_multi_hit_recall_counts_a_document_retrieved_twice_once() -> None:
    # found {a} of {a, b}: 1 / 2, however often "a" was retrieved
    assert recall(["a", "a", "a"], ["a", "b"], mode="multi_hit") == 0.5


def test_multi_hit_recall_divides_by_unique_relevant_documents() -> None:
    # relevant {a, a, b} is the set {a, b}: 1 / 2, not 2 / 3 or 1 / 3
    assert recall(["a"], ["a", "a", "b"], mode="multi_hit") == 0.5


@pytest.mark.parametrize("mode", ["single_hit", "multi_hit"])
def test_recall_without_hits_is_zero(mode: Any) -> None:
    assert recall(["x", "y"], ["a", "b"], mode=mode) == 0.0


def test_recall_rejects_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="unknown recall mode 'all_hits'"):
        recall(["a"], ["a"], mode="all_hits")  # type: ignore[arg-type]


# reciprocal rank


def test_reciprocal_rank_is_one_over_the_rank_of_the_first_relevant_document() -> None:
    # first relevant document ("a") at rank 3: 1 / 3
    assert reciprocal_rank(["x", "y", "a", "b"], ["a", "b"]) == pytest.approx(1 / 3)


def test_reciprocal_rank_is_one_when_the_first_document_is_relevant() -> None:
    assert reciprocal_rank(["b", "x"], ["a", "b"]) == 1.0


def test_reciprocal_rank_counts_the_rank_a_duplicate_occupies() -> None:
    # "x" occupies ranks 1 and 2, so "a" is at rank 3: 1 / 3
    assert reciprocal_rank(["x", "x", "a"], ["a"]) == pytest.approx(1 / 3)


def test_reciprocal_rank_without_hits_is_zero() -> None:
    assert reciprocal_rank(["x", "y"], ["a"]) == 0.0


# average precision


def test_average_precision_sums_precision_at_each_hit_over_relevant_count() -> None:
    # hits at rank 1 (1/1) and rank 3 (2/3): (1 + 2/3) / 2 = 5/6
    assert average_precision(["a", "x", "b"], ["a", "b"]) == pytest.approx(5 / 6)


def test_average_precision_divides_by_all_relevant_documents_not_only_found_ones() -> None:
    # hits at rank 2 (1/2) and rank 4 (2/4); "c" never found: (1/2 + 1/2) / 3 = 1/3
    assert average_precision(["x", "a", "y", "b"], ["a", "b", "c"]) == pytest.approx(1 / 3)


def test_average_precision_credits_a_duplicate_once_but_counts_its_rank() -> None:
    # rank 1 "a": hit, 1/1; rank 2 "a" again: no credit; rank 3 "b": hit, 2/3
    # (1 + 2/3) / 2 = 5/6, where ["a", "b"] alone would score 1.0
    assert average_precision(["a", "a", "b"], ["a", "b"]) == pytest.approx(5 / 6)
    assert average_precision(["a", "b"], ["a", "b"]) == 1.0


def test_average_precision_ignores_duplicates_in_the_relevant_list() -> None:
    # relevant {a, a, b} is {a, b}: (1/1 + 2/2) / 2 = 1.0, not (1 + 1) / 3
    assert average_precision(["a", "b"], ["a", "a", "b"]) == 1.0


def test_average_precision_without_hits_is_zero() -> None:
    assert average_precision(["x", "y", "z"], ["a"]) == 0.0


# ndcg


def test_ndcg_discounts_a_relevant_document_by_log2_of_rank_plus_one() -> None:
    # DCG = 1/log2(3) = 0.6309; IDCG (one relevant doc) = 1/log2(2) = 1
    assert ndcg(["x", "a"], ["a"]) == pytest.approx(1 / math.log2(3))


def test_ndcg_of_an_ideal_ranking_is_one() -> None:
    assert ndcg(["a", "b", "x"], ["a", "b"]) == pytest.approx(1.0)


def test_ndcg_of_a_partly_misordered_ranking() -> None:
    # DCG = 1/log2(2) + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3) = 1.6309; 1.5 / 1.6309 = 0.9197
    assert ndcg(["a", "x", "b"], ["a", "b"]) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert ndcg(["a", "x", "b"], ["a", "b"]) == pytest.approx(0.91972, abs=1e-5)


def test_ndcg_at_k_cuts_the_ranking_and_caps_the_ideal_at_k() -> None:
    # k=2: DCG = 1/log2(3) (only "a" at rank 2 counts); IDCG over min(3, 2) = 2 docs
    # = 1 + 1/log2(3); 0.6309 / 1.6309 = 0.3869
    expected = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert ndcg(["x", "a", "b"], ["a", "b", "c"], k=2) == pytest.approx(expected)


def test_ndcg_without_k_uses_every_rank_and_every_relevant_document() -> None:
    # DCG = 1/log2(3) + 1/log2(4) = 1.1309; IDCG = 1 + 1/log2(3) + 1/log2(4) = 2.1309
    dcg = 1 / math.log2(3) + 0.5
    assert ndcg(["x", "a", "b"], ["a", "b", "c"]) == pytest.approx(dcg / (1 + dcg))


def test_ndcg_credits_a_duplicate_once() -> None:
    # DCG = 1 (the second "a" earns nothing); IDCG = 1 + 1/log2(3) = 1.6309 -> 0.6131
    assert ndcg(["a", "a"], ["a", "b"]) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_ndcg_without_hits_is_zero() -> None:
    assert ndcg(["x"], ["a"], k=5) == 0.0


# graded ndcg: the relevant documents' scores are their relevance (Haystack)

HAYSTACK_GRADED_RELEVANT = [
    {"content": "doc1", "score": 3},
    {"content": "doc2", "score": 2},
    {"content": "doc3", "score": 3},
    {"content": "doc6", "score": 2},
    {"content": "doc7", "score": 3},
    {"content": "doc8", "score": 2},
]
HAYSTACK_GRADED_RETRIEVED = ["doc1", "doc2", "doc3", "doc4", "doc5"]


def test_ndcg_uses_the_relevant_documents_scores_as_graded_relevance() -> None:
    # Haystack's test_run_with_scores: 0.6592 (binary relevance would give 0.6448)
    # DCG  = 3/log2(2) + 2/log2(3) + 3/log2(4) = 5.7619
    # IDCG = scores sorted 3, 3, 3, 2, 2, 2 at ranks 1..6 = 8.7403
    score = ndcg(HAYSTACK_GRADED_RETRIEVED, HAYSTACK_GRADED_RELEVANT)
    assert score == pytest.approx(0.6592, abs=1e-4)
    dcg = 3 + 2 / math.log2(3) + 3 / 2
    idcg = sum(rel / math.log2(rank + 1) for rank, rel in enumerate([3, 3, 3, 2, 2, 2], 1))
    assert score == pytest.approx(dcg / idcg)


def test_graded_ndcg_compares_by_the_chosen_key() -> None:
    relevant = [
        {"id": d["content"], "content": "other", "score": d["score"]}
        for d in HAYSTACK_GRADED_RELEVANT
    ]
    retrieved = [{"id": name, "content": "x"} for name in HAYSTACK_GRADED_RETRIEVED]
    assert ndcg(retrieved, relevant, key="id") == pytest.approx(0.6592, abs=1e-4)


@dataclass
class HaystackLikeDocument:
    content: str
    score: float | None = None


def test_the_score_of_a_document_object_is_its_relevance() -> None:
    relevant = [HaystackLikeDocument(d["content"], d["score"]) for d in HAYSTACK_GRADED_RELEVANT]
    assert ndcg(HAYSTACK_GRADED_RETRIEVED, relevant) == pytest.approx(0.6592, abs=1e-4)


def test_graded_ndcg_ignores_the_scores_of_the_retrieved_documents() -> None:
    retrieved = [{"content": "a", "score": 0.1}, {"content": "b", "score": 0.9}]
    # no relevant score: binary; "b" at rank 2 of one relevant: 1/log2(3)
    assert ndcg(retrieved, ["b"]) == pytest.approx(1 / math.log2(3))


def test_graded_ndcg_keeps_the_highest_score_of_a_repeated_relevant_document() -> None:
    relevant = [{"content": "a", "score": 1.0}, {"content": "a", "score": 0.5}]
    assert ndcg(["a"], relevant) == 1.0


def test_graded_ndcg_credits_a_repeated_retrieved_document_once() -> None:
    assert ndcg(["a", "a"], [{"content": "a", "score": 1.0}]) == 1.0


def test_graded_ndcg_at_k_takes_the_k_highest_scores_as_the_ideal() -> None:
    relevant = [{"content": "a", "score": 1}, {"content": "b", "score": 3}]
    # k=1: DCG = 1/log2(2) ("a" at rank 1); IDCG = 3/log2(2) (the best score at rank 1)
    assert ndcg(["a", "b"], relevant, k=1) == pytest.approx(1 / 3)


def test_relevant_documents_mixing_scored_and_unscored_are_refused() -> None:
    with pytest.raises(DocumentScoreError, match=r"relevant\[1\] has none"):
        ndcg(["a"], [{"content": "a", "score": 3}, {"content": "b"}])


@pytest.mark.parametrize("bad", [-1, math.nan, math.inf, "3", True])
def test_a_relevance_score_must_be_a_finite_non_negative_number(bad: Any) -> None:
    with pytest.raises(DocumentScoreError, match=r"relevant\[0\]"):
        ndcg(["a"], [{"content": "a", "score": bad}])


def test_graded_ndcg_where_every_relevance_is_zero_scores_zero_with_a_warning() -> None:
    with pytest.warns(EmptyGroundTruthWarning, match="no relevant document has a score above 0"):
        assert ndcg(["a"], [{"content": "a", "score": 0}]) == 0.0


class IntLike:
    """Stands in for numpy.int64: an integer through __index__ only."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def test_ndcg_accepts_an_integer_like_k() -> None:
    # k=1 keeps only "x": DCG = 0
    assert ndcg(["x", "a"], ["a"], k=IntLike(1)) == 0.0  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [0, -1, True, 1.5, "2"])
def test_ndcg_rejects_a_k_that_is_not_a_positive_integer(k: Any) -> None:
    with pytest.raises(ValueError, match="k must be a positive integer"):
        ndcg(["a"], ["a"], k=k)


# empty inputs


@pytest.mark.parametrize("metric", ALL_METRICS, ids=lambda m: m.__name__)
def test_empty_relevant_documents_score_zero_with_a_warning(metric: Callable[..., float]) -> None:
    with pytest.warns(EmptyGroundTruthWarning, match="relevant documents are empty"):
        assert metric(["a", "b"], []) == 0.0


@pytest.mark.parametrize("metric", ALL_METRICS, ids=lambda m: m.__name__)
def test_empty_retrieved_documents_score_zero_without_a_warning(
    metric: Callable[..., float],
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert metric([], ["a"]) == 0.0


def test_a_single_string_instead_of_a_list_is_rejected() -> None:
    with pytest.raises(TypeError, match="retrieved must be a list of documents"):
        recall("abc", ["a"])


# document keys


@dataclass
class LangChainLikeDocument:
    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)


def test_documents_compare_by_content_by_default() -> None:
    retrieved = [{"content": "Paris", "id": "d9"}, LangChainLikeDocument("Rome")]
    assert reciprocal_rank(retrieved, ["Rome"]) == 0.5


def test_documents_compare_by_id() -> None:
    retrieved = [{"id": "d2", "content": "same"}, {"id": "d1", "content": "same"}]
    relevant = [{"id": "d1", "content": "different text"}]
    # by id "d1" is at rank 2: 1/2; by content nothing matches
    assert reciprocal_rank(retrieved, relevant, key="id") == 0.5
    assert reciprocal_rank(retrieved, relevant) == 0.0


def test_documents_compare_by_a_metadata_path() -> None:
    retrieved = [
        {"content": "chunk 1", "metadata": {"url": "https://a"}},
        LangChainLikeDocument("chunk 2", {"url": "https://b"}),
        {"content": "chunk 3", "meta": {"url": "https://a"}},
    ]
    relevant = [{"content": "whole page", "metadata": {"url": "https://a"}}]
    # rank 1 credits https://a; rank 3 is the same url again: AP = (1/1) / 1
    assert average_precision(retrieved, relevant, key="metadata.url") == 1.0


def test_documents_compare_by_a_nested_metadata_path() -> None:
    retrieved = [{"metadata": {"source": {"page": 3}}}, {"metadata": {"source": {"page": 7}}}]
    assert recall(retrieved, [{"metadata": {"source": {"page": 7}}}], key="metadata.source.page")


def test_openinference_documents_with_json_metadata_are_understood() -> None:
    retrieved = [
        {"document.id": "d1", "document.content": "a", "document.metadata": '{"url": "u1"}'},
        {"document.id": "d2", "document.content": "b", "document.metadata": '{"url": "u2"}'},
    ]
    assert reciprocal_rank(retrieved, [{"id": "d2"}], key="id") == 0.5
    assert reciprocal_rank(retrieved, ["b"]) == 0.5
    assert reciprocal_rank(retrieved, [{"metadata": {"url": "u2"}}], key="metadata.url") == 0.5


# a document without the compared part (Haystack: it matches nothing)


def test_a_retrieved_document_without_the_key_matches_nothing_but_keeps_its_rank() -> None:
    retrieved = [{"content": "no id here"}, {"id": "d1"}]
    # rank 1 has no id, so it is not a hit; "d1" is at rank 2: 1 / 2
    assert reciprocal_rank(retrieved, [{"id": "d1"}], key="id") == 0.5


def test_two_documents_without_the_key_do_not_match_each_other() -> None:
    # Haystack's "missing on some documents": neither side's missing file_id is a match
    relevant = [{"meta": {"file_id": "f1"}}, {"content": "no file_id"}]
    retrieved = [{"content": "also no file_id"}, {"meta": {"file_id": "f2"}}]
    assert recall(retrieved, relevant, key="metadata.file_id") == 0.0


def test_a_plain_string_has_no_id_so_it_matches_nothing() -> None:
    assert recall(["text", {"id": "d1"}], [{"id": "d1"}], key="id") == 1.0
    assert recall(["text"], [{"id": "d1"}], key="id") == 0.0


def test_a_relevant_document_without_the_key_is_left_out_of_the_relevant_set() -> None:
    relevant = [{"metadata": {"url": "u1"}}, {"metadata": {"title": "no url"}}]
    # only u1 can ever be found: relevant set {u1}, found: 1 / 1
    assert recall([{"metadata": {"url": "u1"}}], relevant, "multi_hit", key="metadata.url") == 1.0
    assert average_precision([{"metadata": {"url": "u1"}}], relevant, key="metadata.url") == 1.0


@pytest.mark.parametrize("metric", ALL_METRICS, ids=lambda m: m.__name__)
def test_relevant_documents_that_all_lack_the_key_score_zero_with_a_warning(
    metric: Callable[..., float],
) -> None:
    with pytest.warns(EmptyGroundTruthWarning, match=r"none of the 2 relevant documents has 'id'"):
        assert metric([{"id": "a"}], ["a", {"content": "b"}], key="id") == 0.0


def test_ndcg_with_a_metadata_key_missing_in_the_ground_truth_can_still_be_perfect() -> None:
    # Haystack's regression case: the relevant document without file_id cannot be found, so it
    # is left out of IDCG too
    relevant = [{"content": "France", "meta": {"file_id": "f1"}}, {"content": "x", "meta": {}}]
    retrieved = [{"content": "France", "meta": {"file_id": "f1"}}]
    assert ndcg(retrieved, relevant, key="metadata.file_id") == 1.0


def test_document_key_of_a_document_without_the_part_says_how_to_write_a_key() -> None:
    with pytest.raises(DocumentKeyError, match=r"has no 'id'") as caught:
        document_key({"content": "x"}, "id")
    assert 'key="content"' in str(caught.value)
    assert 'key="metadata.' in str(caught.value)


def test_document_key_of_a_plain_string_says_to_compare_by_content() -> None:
    with pytest.raises(DocumentKeyError, match=r"plain string") as caught:
        document_key("text", "id")
    assert 'key="content"' in str(caught.value)


def test_an_unknown_key_form_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="invalid document key 'url'"):
        recall(["a"], ["a"], key="url")


def test_an_invalid_key_error_shows_the_valid_ways_to_write_a_key() -> None:
    with pytest.raises(ConfigurationError) as caught:
        check_document_key("embedding")
    message = str(caught.value)
    assert 'key="content"' in message
    assert 'key="id"' in message
    assert 'key="metadata.url"' in message


def test_a_haystack_meta_key_is_answered_with_the_metadata_spelling() -> None:
    with pytest.raises(ConfigurationError, match=r'did you mean key="metadata.file_id"'):
        check_document_key("meta.file_id")


@pytest.mark.parametrize("key", [5, None, ["id"]])
def test_a_key_that_is_not_a_string_is_a_configuration_error(key: Any) -> None:
    with pytest.raises(ConfigurationError, match="document key must be a string"):
        check_document_key(key)
