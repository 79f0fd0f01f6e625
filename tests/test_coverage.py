"""Tests of sparse_tutorial.coverage: hand-computed coverage vectors and losses, masking, Tu et al. updates."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from sparse_tutorial.attention import Attention, CoverageAdditiveScore
from sparse_tutorial.coverage import (
    FertilityCoverage,
    NeuralCoverage,
    accumulate_coverage,
    coverage_loss,
    update_coverage,
)

# One sequence of 3 decoder steps over 3 source words, and its coverage before each step, by hand.
WEIGHTS = torch.tensor([[[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 1.0]]])
COVERAGE = torch.tensor([[[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.7, 0.8, 0.5]]])
# Σ_i min(a_t,i, c_t,i): step 0: 0; step 1: 0.2 + 0.3 + 0 = 0.5; step 2: 0 + 0 + 0.5 = 0.5.
PER_STEP_LOSS = torch.tensor([[0.0, 0.5, 0.5]])


def test_accumulate_coverage_by_hand():
    torch.testing.assert_close(accumulate_coverage(WEIGHTS), COVERAGE)


def test_step_wise_updates_agree_with_accumulation():
    torch.manual_seed(0)
    weights = torch.softmax(torch.randn(2, 5, 4), dim=-1)
    coverage = torch.zeros(2, 4)
    for step in range(5):
        torch.testing.assert_close(coverage, accumulate_coverage(weights)[:, step])
        coverage = update_coverage(coverage, weights[:, step])
    torch.testing.assert_close(coverage, weights.sum(1))


def test_coverage_loss_by_hand():
    torch.testing.assert_close(coverage_loss(WEIGHTS, reduction="none"), PER_STEP_LOSS)
    torch.testing.assert_close(coverage_loss(WEIGHTS), torch.tensor(1 / 3))
    torch.testing.assert_close(coverage_loss(WEIGHTS, COVERAGE), torch.tensor(1 / 3))


def test_coverage_loss_averages_over_real_target_tokens_only():
    target_mask = torch.tensor([[True, True, False]])
    torch.testing.assert_close(coverage_loss(WEIGHTS, target_mask=target_mask), torch.tensor(0.5 / 2))
    torch.testing.assert_close(coverage_loss(WEIGHTS, target_mask=target_mask, reduction="none"),
                               torch.tensor([[0.0, 0.5, 0.0]]))
    # Two sequences: 3 + 1 real tokens; the mean is over the 4 tokens, not over the 2 sequences.
    weights = torch.cat([WEIGHTS, torch.full((1, 3, 3), 1 / 3)])
    target_mask = torch.tensor([[True, True, True], [True, False, False]])
    torch.testing.assert_close(coverage_loss(weights, target_mask=target_mask), torch.tensor(1.0 / 4))
    assert coverage_loss(weights, target_mask=torch.zeros(2, 3, dtype=torch.bool)) == 0


def test_coverage_loss_gradcheck():
    torch.manual_seed(0)
    weights = torch.softmax(torch.randn(2, 3, 4, dtype=torch.float64), dim=-1).requires_grad_(True)
    target_mask = torch.tensor([[True, True, True], [True, True, False]])
    assert torch.autograd.gradcheck(lambda w: coverage_loss(w, target_mask=target_mask), (weights,))


@settings(max_examples=50, deadline=None)
@given(batch=st.integers(1, 3), tgt_len=st.integers(1, 6), src_len=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_coverage_loss_is_between_zero_and_one_per_step(batch, tgt_len, src_len, seed):
    generator = torch.Generator().manual_seed(seed)
    weights = torch.softmax(3 * torch.randn(batch, tgt_len, src_len, generator=generator), dim=-1)
    per_step = coverage_loss(weights, reduction="none")
    assert (per_step >= 0).all() and (per_step <= 1 + 1e-6).all()
    assert (per_step[:, 0] == 0).all(), "nothing is covered before the first step"
    torch.testing.assert_close(accumulate_coverage(weights)[:, -1] + weights[:, -1], weights.sum(1))


def test_coverage_errors():
    with pytest.raises(ValueError, match=r"weights must have shape \(batch, tgt_len, src_len\)"):
        coverage_loss(torch.rand(2, 3))
    with pytest.raises(ValueError, match=r"target_mask must have shape \(1, 3\)"):
        coverage_loss(WEIGHTS, target_mask=torch.ones(1, 2, dtype=torch.bool))
    with pytest.raises(TypeError, match="target_mask must be a boolean tensor"):
        coverage_loss(WEIGHTS, target_mask=torch.ones(1, 3))
    with pytest.raises(ValueError, match="coverage must have the shape of weights"):
        coverage_loss(WEIGHTS, coverage=COVERAGE[:, :2])
    with pytest.raises(ValueError, match="reduction must be one of"):
        coverage_loss(WEIGHTS, reduction="average")
    with pytest.raises(ValueError, match="coverage and weights must have the same shape"):
        update_coverage(torch.zeros(2, 3), torch.zeros(2, 4))


def test_fertility_coverage_by_hand():
    # With U_f = 0 every fertility is N · sigmoid(0) = N / 2: N = 4 gives Φ = 2, so C += α / 2.
    update = FertilityCoverage(key_dim=3, max_fertility=4.0)
    nn.init.zeros_(update.fertility_proj.weight)
    keys = torch.randn(1, 3, 3)
    torch.testing.assert_close(update.fertility(keys), torch.full((1, 3), 2.0))
    coverage = update(torch.tensor([[0.1, 0.0, 0.3]]), torch.tensor([[0.5, 0.5, 0.0]]), keys)
    torch.testing.assert_close(coverage, torch.tensor([[0.35, 0.25, 0.3]]))
    with pytest.raises(ValueError, match=r"weights must have shape \(batch, src_len\) = \(1, 3\)"):
        update(coverage, torch.zeros(1, 2), keys)


def test_neural_coverage_is_a_gru_per_source_word_and_keeps_padding():
    torch.manual_seed(0)
    update = NeuralCoverage(query_dim=4, key_dim=5, coverage_dim=3)
    coverage, weights = torch.randn(2, 6, 3), torch.softmax(torch.randn(2, 6), -1)
    query, keys = torch.randn(2, 4), torch.randn(2, 6, 5)
    mask = torch.arange(6) < torch.tensor([[6], [4]])
    updated = update(coverage, weights, query, keys, mask=mask)
    assert updated.shape == (2, 6, 3)
    by_hand = update.cell(torch.cat([weights[1, 2:3], query[1], keys[1, 2]]).unsqueeze(0), coverage[1, 2:3])
    torch.testing.assert_close(updated[1, 2:3], by_hand)
    assert torch.equal(updated[1, 4:], coverage[1, 4:]), "padded source words keep their coverage"
    with pytest.raises(ValueError, match=r"query must have shape \(2, 4\), got \(2, 5\)"):
        update(coverage, weights, torch.randn(2, 5), keys)


def test_coverage_attention_decodes_several_steps_with_gradients():
    # Tu et al.'s coverage model: eq. 21 score with the neural coverage of eq. 22, over 4 decoder steps.
    torch.manual_seed(0)
    batch, src_len, query_dim, key_dim, coverage_dim = 2, 5, 4, 6, 3
    attention = Attention(CoverageAdditiveScore(query_dim, key_dim, 8, coverage_dim=coverage_dim))
    update = NeuralCoverage(query_dim, key_dim, coverage_dim)
    keys = torch.randn(batch, src_len, key_dim, requires_grad=True)
    mask = torch.arange(src_len) < torch.tensor([[5], [3]])
    coverage = torch.zeros(batch, src_len, coverage_dim)
    all_weights = []
    for _ in range(4):
        query = torch.randn(batch, query_dim)
        _, weights = attention(query, keys, mask=mask, coverage=coverage)
        coverage = update(coverage, weights, query, keys, mask=mask)
        all_weights.append(weights)
    weights = torch.stack(all_weights, dim=1)
    loss = coverage_loss(weights) + coverage.square().sum()
    loss.backward()
    assert torch.isfinite(keys.grad).all()
    assert update.cell.weight_hh.grad.abs().sum() > 0, "the coverage model must receive a gradient"
    assert (weights[~mask.unsqueeze(1).expand_as(weights)] == 0).all()
