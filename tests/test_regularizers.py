"""Tests of sparse_tutorial.regularizers: norms, entropy, their (sub)gradients and the masked penalties."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sparse_tutorial.projections import entmax15, softmax, sparsemax
from sparse_tutorial.regularizers import (
    PENALTIES,
    entropy,
    entropy_penalty,
    l1_norm,
    l1_penalty,
    linf_norm,
    linf_penalty,
)


def _weights(*shape, seed=0, dtype=torch.float64):
    return torch.softmax(torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed)), -1)


def test_values_by_hand():
    weights = torch.tensor([[0.5, 0.25, 0.25, 0.0], [1.0, 0.0, 0.0, 0.0]])
    torch.testing.assert_close(l1_norm(weights), torch.ones(2))
    torch.testing.assert_close(linf_norm(weights), torch.tensor([0.5, 1.0]))
    torch.testing.assert_close(entropy(weights), torch.tensor([1.5 * math.log(2), 0.0]))
    torch.testing.assert_close(entropy(torch.full((3, 8), 1 / 8), dim=0), torch.full((8,), 3 / 8 * math.log(8)))


def test_l1_norm_gradient_through_softmax_vanishes():
    # ‖softmax(e)‖₁ = 1 for every e, so in exact arithmetic the gradient is zero (chapter 2's point). In
    # floating point it is α_j (1 − Σα), i.e. the rounding error of the computed Σ softmax: not zero, but a
    # few ulps at most. Measured on this input: 0.22 eps (float32) and 0.13 eps (float64).
    scores = torch.randn(16, 40, generator=torch.Generator().manual_seed(1), requires_grad=True)
    l1_norm(softmax(scores)).sum().backward()
    assert scores.grad.abs().max() <= 2 * torch.finfo(torch.float32).eps
    scores64 = scores.detach().double().requires_grad_(True)
    l1_norm(softmax(scores64)).sum().backward()
    assert scores64.grad.abs().max() <= torch.finfo(torch.float64).eps  # ≈ 2.2e-16, vs 2.4e-7 in float32


@pytest.mark.parametrize("projection", [sparsemax, entmax15])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_l1_norm_gradient_through_sparse_projections_is_exactly_zero(projection, dtype):
    # Their closed-form backward centres the upstream gradient (1 on the support, |·|' = 0 at the exact
    # zeros) by its own mean over the support, Σ1/|S| or Σ√p/Σ√p, which is exactly 1: no rounding left.
    scores = torch.randn(16, 40, dtype=dtype, generator=torch.Generator().manual_seed(1)) * 3
    scores[0, :5] = -math.inf
    scores[1] = -math.inf
    scores.requires_grad_(True)
    weights = projection(scores)
    assert (weights == 0).any() and (weights > 0).sum() > 16
    l1_norm(weights).sum().backward()
    assert (scores.grad == 0).all()


def test_linf_gradient_is_one_hot_on_first_maximiser():
    weights = torch.tensor([[0.1, 0.4, 0.4, 0.1], [0.7, 0.1, 0.1, 0.1], [-0.9, 0.5, 0.2, 0.2]],
                           requires_grad=True)
    linf_norm(weights).sum().backward()
    expected = torch.tensor([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0]])
    assert torch.equal(weights.grad, expected)
    torch.testing.assert_close(linf_norm(weights.detach()), torch.tensor([0.4, 0.7, 0.9]))


def test_linf_along_other_dim():
    weights = torch.tensor([[0.2, 0.9], [0.8, 0.1]], requires_grad=True)
    linf_norm(weights, dim=0).sum().backward()
    assert torch.equal(weights.grad, torch.tensor([[0.0, 1.0], [1.0, 0.0]]))


def test_entropy_gradient_through_softmax_matches_closed_form():
    # ∂H(softmax(e))/∂e = −α ⊙ (log α + H)
    scores = torch.randn(5, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(2), requires_grad=True)
    alpha = softmax(scores)
    value = entropy(alpha)
    value.sum().backward()
    alpha = alpha.detach()
    torch.testing.assert_close(scores.grad, -alpha * (alpha.log() + value.detach()[:, None]))


def test_entropy_gradient_finite_at_exact_zeros_of_sparsemax():
    scores = torch.tensor([[2.0, 1.5, -3.0, -4.0], [0.0, 0.0, 0.0, 0.0]], requires_grad=True)
    alpha = sparsemax(scores)
    assert (alpha == 0).any()
    alpha.retain_grad()
    entropy(alpha).sum().backward()
    assert torch.isfinite(alpha.grad).all() and torch.isfinite(scores.grad).all()
    assert (alpha.grad[alpha == 0] == 0).all()
    positive = alpha > 0
    torch.testing.assert_close(alpha.grad[positive], -(alpha.detach()[positive].log() + 1))


@pytest.mark.parametrize("fn", [l1_norm, linf_norm, entropy])
def test_gradcheck_float64(fn):
    weights = _weights(3, 6, seed=3).requires_grad_(True)
    assert torch.autograd.gradcheck(fn, (weights,))
    assert torch.autograd.gradcheck(lambda w: fn(w, dim=0), (weights,))


@pytest.mark.parametrize("name", PENALTIES)
def test_penalties_gradcheck_with_mask(name):
    weights = _weights(2, 3, 5, seed=4).requires_grad_(True)
    target_mask = torch.tensor([[True, True, False], [True, False, False]])
    assert torch.autograd.gradcheck(lambda w: PENALTIES[name](w, target_mask), (weights,))


def test_penalties_average_per_real_target_token():
    weights = _weights(2, 3, 5, seed=5)
    target_mask = torch.tensor([[True, True, False], [True, False, False]])
    weights_with_junk_padding = weights.clone()
    weights_with_junk_padding[~target_mask] = torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    real = weights[target_mask]
    torch.testing.assert_close(entropy_penalty(weights, target_mask), entropy(real).mean())
    torch.testing.assert_close(entropy_penalty(weights_with_junk_padding, target_mask), entropy(real).mean())
    torch.testing.assert_close(linf_penalty(weights, target_mask), -linf_norm(real).mean())
    torch.testing.assert_close(l1_penalty(weights, target_mask), torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(entropy_penalty(weights), entropy(weights).mean())
    assert PENALTIES == {"entropy": entropy_penalty, "linf": linf_penalty, "l1": l1_penalty}


def test_minimising_penalties_sharpens_attention():
    scores = torch.randn(2, 3, 6, generator=torch.Generator().manual_seed(6), requires_grad=True)
    optimizer = torch.optim.SGD([scores], lr=1.0)
    start = entropy(softmax(scores)).mean().item()
    for _ in range(50):
        optimizer.zero_grad()
        (entropy_penalty(softmax(scores)) + linf_penalty(softmax(scores))).backward()
        optimizer.step()
    assert entropy(softmax(scores)).mean().item() < start / 2


def test_errors_name_the_argument():
    weights = _weights(2, 3, 4, seed=7)
    with pytest.raises(ValueError, match="target_mask"):
        entropy_penalty(weights, torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="target_mask"):
        linf_penalty(weights, torch.ones(2, 3))
    with pytest.raises(ValueError, match="weights"):
        l1_penalty(weights[0])
    with pytest.raises(TypeError, match="weights"):
        entropy(torch.tensor([1, 0]))


# Any finite float64 scores, huge ones included; softmax and sparsemax turn them into points of the simplex
# (dense and sparse, with exact ties where scores repeat).
simplex_scores = st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=50)


@settings(max_examples=60, deadline=None)
@given(simplex_scores, st.sampled_from([softmax, sparsemax]))
def test_property_norms_and_entropy_bounds_on_the_simplex(values, projection):
    weights = projection(torch.tensor(values, dtype=torch.float64))
    n = len(values)
    torch.testing.assert_close(l1_norm(weights), torch.tensor(1.0, dtype=torch.float64), atol=1e-12, rtol=0)
    assert -1e-12 <= entropy(weights) <= math.log(n) + 1e-12
    assert 1 / n - 1e-12 <= linf_norm(weights) <= 1 + 1e-12


@settings(max_examples=60, deadline=None)
@given(simplex_scores, st.sampled_from([softmax, sparsemax]))
def test_property_linf_gradient_is_one_at_the_first_maximiser(values, projection):
    weights = projection(torch.tensor(values, dtype=torch.float64)).requires_grad_(True)
    linf_norm(weights).backward()
    # The first maximiser found by plain Python, independently of the torch.argmax that linf_norm uses.
    as_list = weights.detach().tolist()
    expected = torch.zeros_like(weights)
    expected[as_list.index(max(as_list))] = 1.0
    assert torch.equal(weights.grad, expected)


def test_linf_norm_of_an_empty_dimension_names_weights():
    with pytest.raises(ValueError, match="weights has an empty dimension"):
        linf_norm(torch.zeros(3, 0))


def test_penalties_and_coverage_loss_share_torch_reduction_over_real_target_tokens():
    """Issue 31: one reduction convention for every per-token quantity: mean over the real target tokens,
    sum, or the per-token values (0 at padding)."""
    from sparse_tutorial.coverage import coverage_loss
    from sparse_tutorial.regularizers import reduce_per_token

    weights = torch.softmax(torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(8)), dim=-1)
    target_mask = torch.tensor([[True, True, False], [True, False, False]])
    for per_token, reduced in ((entropy(weights), lambda r: entropy_penalty(weights, target_mask, r)),
                               (-linf_norm(weights), lambda r: linf_penalty(weights, target_mask, r)),
                               (l1_norm(weights), lambda r: l1_penalty(weights, target_mask, r))):
        kept = per_token.masked_fill(~target_mask, 0.0)
        torch.testing.assert_close(reduced("none"), kept)
        torch.testing.assert_close(reduced("sum"), kept.sum())
        torch.testing.assert_close(reduced("mean"), kept.sum() / 3)
    per_step = coverage_loss(weights, target_mask=target_mask, reduction="none")
    torch.testing.assert_close(coverage_loss(weights, target_mask=target_mask, reduction="sum"), per_step.sum())
    torch.testing.assert_close(reduce_per_token(per_step, target_mask), coverage_loss(weights, target_mask=target_mask))
    with pytest.raises(ValueError, match=r"reduction must be one of \('mean', 'sum', 'none'\), got 'elementwise'"):
        entropy_penalty(weights, reduction="elementwise")
