"""Tests for sparse_tutorial.metrics: BLEU, chrF and bootstrap via sacrebleu, entropy per token, sink share,
AER/SAER and argmax agreement by hand."""
import math

import pytest
import sacrebleu
import torch

from sparse_tutorial.metrics import (aer, argmax_agreement, attention_entropy_per_token, corpus_bleu, corpus_chrf,
                                     hard_alignment, paired_bootstrap, saer, sink_share)

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


def test_chrf_matches_sacrebleu_is_case_insensitive_and_takes_variable_references():
    expected = sacrebleu.corpus_chrf(HYPS, [REFS]).score
    assert 0 < expected < 100
    assert corpus_chrf(HYPS, REFS) == pytest.approx(expected)
    assert corpus_chrf([h.upper() for h in HYPS], REFS) == pytest.approx(expected)
    chrf_plus_plus = sacrebleu.corpus_chrf(HYPS, [REFS], word_order=2).score
    assert chrf_plus_plus != pytest.approx(expected)
    assert corpus_chrf(HYPS, REFS, word_order=2) == pytest.approx(chrf_plus_plus)
    # a second reference equal to the hypothesis is the best match of that sentence
    multi = corpus_chrf(HYPS, [[REFS[0]], [REFS[1], HYPS[1]], [REFS[2], HYPS[2]]])
    assert multi == pytest.approx(100.0)
    with pytest.raises(ValueError, match="references"):
        corpus_chrf(HYPS, REFS[:2])


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


def test_sink_share_counts_argmax_on_first_and_last_source_token():
    # rows: argmax 0, argmax 2 (last), a tie between 0 and 1 (first max: 0); second sentence src_len 2
    first = torch.tensor([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.4, 0.4, 0.2]])
    second = torch.tensor([[0.2, 0.8]])
    assert sink_share([first, second], position=0) == pytest.approx(2 / 4)
    assert sink_share([first, second], position=-1) == pytest.approx(2 / 4)  # row 2 of first, row 1 of second
    assert sink_share([first, second], position=1) == pytest.approx(1 / 4)
    assert sink_share([torch.full((2, 5), 0.2)], position=0) == 1.0  # uniform rows: ties go to position 0


def test_sink_share_rejects_empty_input_and_positions_outside_the_source():
    with pytest.raises(ValueError, match="no target token"):
        sink_share([])
    with pytest.raises(ValueError, match="no target token"):
        sink_share([torch.zeros(0, 3)])
    with pytest.raises(ValueError, match="position 3 lies outside a source of length 3"):
        sink_share([torch.eye(3)], position=3)
    with pytest.raises(ValueError, match="tgt_len, src_len"):
        sink_share([torch.eye(3)[None]])


def test_argmax_agreement_skips_unlinked_target_tokens():
    attn = torch.tensor([[0.7, 0.2, 0.1],   # argmax 0, gold {0, 2}: hit
                         [0.1, 0.8, 0.1],   # argmax 1, gold {2}: miss
                         [0.5, 0.3, 0.2]])  # argmax 0, no gold link: left out
    sure = [{(0, 0), (2, 0), (2, 1)}]
    assert argmax_agreement([attn], sure) == pytest.approx(1 / 2)
    assert argmax_agreement([attn, attn[:1]], sure + [{(1, 0)}]) == pytest.approx(1 / 3)
    one_hot = torch.eye(3)
    assert argmax_agreement([one_hot], [{(0, 0), (1, 1), (2, 2)}]) == 1.0


def test_argmax_agreement_rejects_bad_input():
    attn = torch.eye(2)
    with pytest.raises(ValueError, match="same length"):
        argmax_agreement([attn], [])
    with pytest.raises(ValueError, match="no link"):
        argmax_agreement([attn], [set()])
    with pytest.raises(ValueError, match="outside"):
        argmax_agreement([attn], [{(2, 0)}])
