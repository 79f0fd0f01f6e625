"""Tests of the summarization measures in sparse_tutorial.metrics: ROUGE through rouge-score (hand-computed
cases, stemming, sentence-level LCS), sentence splitting, Lead-k and the repeated n-gram share."""
import pytest

from sparse_tutorial.metrics import ROUGE_TYPES, lead_k, repeated_ngram_fraction, rouge, split_sentences


def test_split_sentences_at_final_punctuation_and_newlines():
    assert split_sentences(" One two. Three four!  Five?\nSix \n\n") == ["One two.", "Three four!", "Five?", "Six"]
    assert split_sentences("version 2.0 is out") == ["version 2.0 is out"]  # no space after the dot
    assert split_sentences("") == []


def test_lead_k_takes_the_first_sentences_one_per_line():
    document = "A b. C d. E f. G h."
    assert lead_k(document, 1) == "A b."
    assert lead_k(document, 3) == "A b.\nC d.\nE f."
    assert lead_k("Only one", 3) == "Only one"
    with pytest.raises(ValueError, match="k"):
        lead_k(document, 0)


def test_rouge_hand_computed():
    scores = rouge(["the cat sat"], ["the cat ran"])
    # unigrams: 2 of 3 match both ways; bigrams: "the cat" is 1 of 2; LCS "the cat" = 2 of 3
    assert scores["rouge1"] == pytest.approx(200 / 3)
    assert scores["rouge2"] == pytest.approx(50.0)
    assert scores["rougeL"] == pytest.approx(200 / 3)
    assert set(scores) == set(ROUGE_TYPES)


def test_rouge_is_a_mean_over_examples_and_bounded():
    scores = rouge(["a b c", "x y"], ["a b c", "p q"])
    assert all(value == pytest.approx(50.0) for value in scores.values())
    assert rouge(["same words here"], ["Same words here."])["rouge2"] == pytest.approx(100.0)


def test_rouge_uses_porter_stemming():
    assert rouge(["cats running"], ["cat runs"], rouge_types=("rouge1",))["rouge1"] == pytest.approx(100.0)


def test_rouge_lsum_works_on_sentences():
    # one LCS over the whole text finds "a b" (2 of 4 tokens); the sentence-level union LCS finds both
    scores = rouge(["a b. c d."], ["c d. a b."], rouge_types=("rougeL", "rougeLsum"))
    assert scores["rougeL"] == pytest.approx(50.0)
    assert scores["rougeLsum"] == pytest.approx(100.0)


def test_rouge_rejects_bad_input():
    with pytest.raises(ValueError, match="same length"):
        rouge(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="rouge_types"):
        rouge(["a"], ["a"], rouge_types=("rouge9",))


def test_repeated_ngram_fraction_hand_computed():
    tokens = ["a", "b", "a", "b", "a"]
    assert repeated_ngram_fraction([tokens], n=2) == pytest.approx(2 / 4)  # ab ba ab ba
    assert repeated_ngram_fraction([tokens], n=3) == pytest.approx(1 / 3)  # aba bab aba
    # pooled over outputs; repeats across different outputs do not count
    assert repeated_ngram_fraction([["x", "y"], ["x", "y"]], n=2) == 0.0
    assert repeated_ngram_fraction([["x"]], n=3) == 0.0
    with pytest.raises(ValueError, match="n"):
        repeated_ngram_fraction([tokens], n=0)
