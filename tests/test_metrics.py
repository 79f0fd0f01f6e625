"""Tests for sparse_tutorial.metrics: BLEU and bootstrap via sacrebleu, entropy per token, AER/SAER by hand."""
import math

import pytest
import sacrebleu
import torch

from sparse_tutorial.metrics import aer, attention_entropy_per_token, corpus_bleu, hard_alignment, paired_bootstrap, saer

HYPS = ["the cat sat on the mat", "a dog ran in the park today", "he reads a good book"]
REFS = ["the cat sat on the mat", "the dog ran in the park", "he is reading a good book"]


def test_bleu_matches_sacrebleu_and_is_case_insensitive():
    expected = sacrebleu.corpus_bleu(HYPS, [REFS], lowercase=True).score
    assert corpus_bleu(HYPS, REFS) == pytest.approx(expected)
    assert corpus_bleu([h.upper() for h in HYPS], REFS) == pytest.approx(expected)
    assert corpus_bleu(REFS, REFS) == pytest.approx(100.0)


def test_multi_reference_with_variable_counts():
    single = corpus_bleu(HYPS, REFS)
    multi = corpus_bleu(HYPS, [[REFS[0]], [REFS[1], HYPS[1]], [REFS[2], "he reads a good book"]])
    assert multi == pytest.approx(100.0) and multi > single


def test_reference_count_mismatch():
    with pytest.raises(ValueError, match="references"):
        corpus_bleu(HYPS, REFS[:2])


def test_paired_bootstrap_flags_a_clearly_better_system():
    refs = [f"sentence number {i} is here and it is long enough" for i in range(60)]
    bad = [f"number {i} here it is" for i in range(60)]
    almost = [refs[0]] + bad[1:]  # one sentence better: not a significant difference
    out = paired_bootstrap(bad, {"good": refs, "almost": almost}, refs, n_samples=200)
    assert out["baseline"]["p_value"] is None
    assert out["good"]["bleu"] == pytest.approx(100.0) and out["good"]["p_value"] < 0.05
    assert out["almost"]["p_value"] > 0.05
    assert out["good"]["bleu"] > out["baseline"]["bleu"]
    again = paired_bootstrap(bad, {"good": refs, "almost": almost}, refs, n_samples=200)
    assert again == out  # seeded


def test_entropy_per_token_masks_padding():
    uniform = torch.full((1, 2, 4), 0.25)
    onehot = torch.nn.functional.one_hot(torch.tensor([[0, 3]]), 4).float()
    weights = torch.cat([uniform, onehot], 1)  # (1, 4, 4)
    mask = torch.tensor([[True, False, True, False]])
    assert attention_entropy_per_token(weights, mask) == pytest.approx(math.log(4) / 2)
    assert attention_entropy_per_token(weights) == pytest.approx(math.log(4) / 2)
    assert attention_entropy_per_token([uniform[0], onehot[0, :1]]) == pytest.approx(2 * math.log(4) / 3)
    with pytest.raises(ValueError, match="target_mask"):
        attention_entropy_per_token(weights, mask[:, :2])


def test_hard_alignment_is_argmax_per_target_token():
    attn = torch.tensor([[0.1, 0.7, 0.2], [0.5, 0.5, 0.0]])
    assert hard_alignment(attn) == {(1, 0), (0, 1)}


def test_aer_by_hand():
    sure, possible = [{(0, 0), (1, 1)}], [{(2, 1)}]
    assert aer([{(0, 0), (1, 1)}], sure, possible) == 0.0
    # A = {(0,0), (2,1), (2,2)}: |A∩S| = 1, |A∩P| = 2 (P ⊇ S), |A| = 3, |S| = 2 -> 1 - 3/5
    assert aer([{(0, 0), (2, 1), (2, 2)}], sure, possible) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="same length"):
        aer([set()], [], [])


def test_saer_by_hand_and_agrees_with_aer_on_one_hot_attention():
    attn = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.2, 0.8]])  # (tgt 2, src 3)
    sure, possible = [{(0, 0)}], [{(2, 1)}]
    # |MA⊙MS| = 0.5, |MA⊙MP| = 0.5 + 0.8, |MA| = 2, |MS| = 1 -> 1 - 1.8/3
    assert saer([attn], sure, possible) == pytest.approx(0.4)
    onehot = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert saer([onehot], sure, possible) == pytest.approx(aer([hard_alignment(onehot)], sure, possible))
    with pytest.raises(ValueError, match="outside"):
        saer([attn], [{(5, 0)}], [set()])
