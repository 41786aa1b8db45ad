"""Answer metrics on hand-worked examples (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest

from evaltrace.metrics import EmptyGroundTruthWarning, exact_match, normalize_answer, token_f1

# normalize_answer


def test_normalize_lowercases_and_strips_punctuation() -> None:
    assert normalize_answer("Hello, World!") == "hello world"


def test_normalize_drops_whole_word_articles_only() -> None:
    assert normalize_answer("The answer is an apple, not a theory") == "answer is apple not theory"


def test_normalize_folds_white_space() -> None:
    assert normalize_answer("  big\t\n  city  ") == "big city"


def test_normalize_strips_unicode_punctuation() -> None:
    assert normalize_answer("\u201cParis\u201d \u2014 France") == "paris france"


# exact_match


def test_exact_match_without_normalisation_compares_raw_strings() -> None:
    assert exact_match("Paris", "Paris") == 1.0
    assert exact_match("Paris", "paris") == 0.0
    assert exact_match("Paris.", "Paris") == 0.0


def test_exact_match_is_not_normalised_by_default() -> None:
    assert exact_match("The Paris", "paris") == 0.0


def test_exact_match_with_normalisation_ignores_case_punctuation_and_articles() -> None:
    # both sides normalise to "paris"
    assert exact_match("The  Paris!", "paris", normalize=True) == 1.0


def test_exact_match_takes_the_best_of_several_references() -> None:
    assert exact_match("Paris", ["London", "Paris"]) == 1.0


def test_exact_match_with_no_references_is_zero_with_a_warning() -> None:
    with pytest.warns(EmptyGroundTruthWarning, match="no reference answers"):
        assert exact_match("Paris", []) == 0.0


# token_f1


def test_token_f1_on_a_partial_overlap() -> None:
    # pred "cat sat on mat" (4 tokens), ref "cat on mat" (3): common = 3
    # P = 3/4, R = 3/3, F1 = 2 * 0.75 * 1 / 1.75 = 6/7
    assert token_f1("The cat sat on the mat.", "a cat on a mat") == pytest.approx(6 / 7)


def test_token_f1_counts_repeated_tokens_as_a_multiset() -> None:
    # pred {yes: 2, no: 1}, ref {yes: 1, no: 2}: common = min(2,1) + min(1,2) = 2
    # P = 2/3, R = 2/3, F1 = 2/3
    assert token_f1("yes yes no", "yes no no") == pytest.approx(2 / 3)


def test_token_f1_does_not_credit_a_repeated_token_more_than_the_reference_has_it() -> None:
    # common = 1, P = 1/3, R = 1/1, F1 = 2 * (1/3) / (4/3) = 0.5
    assert token_f1("paris paris paris", "paris") == pytest.approx(0.5)


def test_token_f1_without_overlap_is_zero() -> None:
    assert token_f1("london", "paris") == 0.0


def test_token_f1_of_two_empty_answers_is_one() -> None:
    assert token_f1("", "") == 1.0


def test_token_f1_of_answers_that_normalise_to_nothing_is_one() -> None:
    # "The" and "a!" are both empty after dropping articles and punctuation
    assert token_f1("The", "a!") == 1.0


def test_token_f1_with_one_empty_answer_is_zero() -> None:
    assert token_f1("", "paris") == 0.0
    assert token_f1("paris", "") == 0.0


def test_token_f1_without_normalisation_keeps_case_and_punctuation() -> None:
    # tokens "Paris," vs "paris": nothing in common
    assert token_f1("Paris,", "paris", normalize=False) == 0.0
    assert token_f1("Paris,", "paris") == 1.0


def test_token_f1_takes_the_best_of_several_references() -> None:
    # against "cat sat down": P = 2/2, R = 2/3, F1 = 0.8; against "dog": 0
    assert token_f1("cat sat", ["dog", "cat sat down"]) == pytest.approx(0.8)
