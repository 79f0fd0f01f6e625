"""Tests of sparse_tutorial.projections.alpha_entmax: the entmax package as reference, the closed forms, both gradients,
α's validation and the module. The numerics standard that every projection meets (masks, all-masked and
length-one rows, ties, half precision, any dim, NaN/+inf, huge scores, gradcheck) runs α-entmax through
tests/test_projections.py, whose registry holds it; here are only its cases that involve α's gradient."""
from __future__ import annotations

import entmax
import pytest
import torch

from sparse_tutorial import AlphaEntmax, alpha_entmax, entmax15, softmax, sparsemax

INF = float("inf")
BISECTION_ALPHAS = [1.2, 1.5, 1.8, 2.5, 4.0]
"""α computed by bisection in the reference tests (1.5 as a tensor, which always takes the bisection path)."""
CASES = [1.25, 1.5, 3.0, 1.0]
"""The α of the edge-case tests of α's gradient (1 gives softmax rows)."""


def _per_row(alpha: float, rows: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.full((rows, 1), alpha, dtype=dtype, requires_grad=True)


@pytest.mark.parametrize("alpha", BISECTION_ALPHAS)
@pytest.mark.parametrize("scale", [0.5, 4.0])
def test_weights_and_both_gradients_equal_entmax_package(alpha, scale):
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(32, 40, dtype=torch.float64, generator=generator) * scale
    upstream = torch.randn(32, 40, dtype=torch.float64, generator=generator)
    ours, theirs = scores.clone().requires_grad_(), scores.clone().requires_grad_()
    our_alpha, their_alpha = _per_row(alpha, 32), _per_row(alpha, 32)
    weights = alpha_entmax(ours, our_alpha)
    reference = entmax.entmax_bisect(theirs, their_alpha, n_iter=100)
    torch.testing.assert_close(weights, reference, atol=1e-6, rtol=0)
    (weights * upstream).sum().backward()
    (reference * upstream).sum().backward()
    torch.testing.assert_close(ours.grad, theirs.grad, atol=1e-6, rtol=0)
    torch.testing.assert_close(our_alpha.grad, their_alpha.grad, atol=1e-6, rtol=0)
    assert scale < 1 or (weights == 0).any()  # large scores give sparse rows: the support's edge is tested


@pytest.mark.parametrize(("alpha", "closed_form"), [(1, softmax), (1.0, softmax), (1.5, entmax15), (2, sparsemax)])
def test_numbers_with_a_closed_form_are_computed_by_it(alpha, closed_form):
    scores = torch.randn(6, 3, 9, generator=torch.Generator().manual_seed(1)) * 2
    assert torch.equal(alpha_entmax(scores, alpha, dim=1), closed_form(scores, dim=1))


@pytest.mark.parametrize(("alpha", "closed_form"), [(1.0, softmax), (1.5, entmax15), (2.0, sparsemax)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_bisection_agrees_with_the_closed_forms(alpha, closed_form, dtype):
    # A tensor α always takes the bisection path (α = 1: its softmax rows); long rows test the default n_iter.
    scores = torch.randn(8, 1000, dtype=dtype, generator=torch.Generator().manual_seed(2)) * 3
    weights = alpha_entmax(scores, torch.tensor(alpha, dtype=dtype))
    expected = closed_form(scores.double(), dim=-1)
    tolerance = 1e-6 if dtype == torch.float32 else 1e-12
    relative_error = (weights.double() - expected).abs().amax(1) / expected.amax(1)
    assert relative_error.max() <= tolerance, relative_error


@pytest.mark.parametrize("alpha", BISECTION_ALPHAS)
def test_gradcheck_scores_and_alpha_float64(alpha):
    # A grid 0.37 apart keeps every score away from the support's edge, where α > 2 has an infinite slope.
    generator = torch.Generator().manual_seed(3)
    scores = (torch.randperm(24, generator=generator).double() * 0.37).view(4, 6) / 2
    scores[0, 5] = -INF
    scores.requires_grad_(True)
    alphas = torch.tensor([[alpha], [alpha + 0.1], [alpha], [alpha + 0.3]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s, a: alpha_entmax(s, a, dim=-1), (scores, alphas))
    assert torch.autograd.gradcheck(lambda s, a: alpha_entmax(s, a, dim=0), (scores, alphas.view(1, 4)[:, :1]))


@pytest.mark.parametrize("alpha", [1.3, 2.5])
def test_second_derivatives_gradgradcheck(alpha):
    scores = (torch.randn(3, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(4)) * 2).requires_grad_()
    alphas = _per_row(alpha, 3)
    assert torch.autograd.gradgradcheck(alpha_entmax, (scores, alphas))


def test_alpha_gradient_at_one_is_the_derivative_of_softmax_along_alpha():
    # At α = 1 the paper's formula is 0/0; ours gives its limit. Compare with a one-sided finite difference.
    scores = torch.randn(5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(5)) * 2
    upstream = torch.randn(5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    alphas = _per_row(1.0, 5)
    weights = alpha_entmax(scores, alphas)
    assert torch.equal(weights, softmax(scores))
    (weights * upstream).sum().backward()
    step = 1e-7
    finite_difference = ((alpha_entmax(scores, alphas.detach() + step) - weights.detach()) * upstream).sum(1) / step
    torch.testing.assert_close(alphas.grad.squeeze(1), finite_difference, atol=1e-5, rtol=0)


@pytest.mark.parametrize("alpha", [1.0001, 1.001, 1.01, 1.2])
def test_float32_is_accurate_near_alpha_one(alpha):
    # [·]^{1/(α−1)} of numbers near 1 loses digits as α → 1 (1e-5 off at α = 1.001), and the paper's two
    # α-gradient terms grow like 1/(α − 1) and cancel (0.2 off at α = 1.001, evaluated as written). The
    # log1p form and the rewritten gradient keep float32 close to float64.
    scores = torch.randn(16, 30, dtype=torch.float64, generator=torch.Generator().manual_seed(7)) * 2
    upstream = torch.randn(16, 30, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    weights, gradients = {}, {}
    for dtype in (torch.float32, torch.float64):
        alphas = _per_row(alpha, 16, dtype)
        weights[dtype] = alpha_entmax(scores.to(dtype), alphas)
        (weights[dtype] * upstream.to(dtype)).sum().backward()
        gradients[dtype] = alphas.grad.double()
    torch.testing.assert_close(weights[torch.float32].double(), weights[torch.float64], atol=1e-6, rtol=0)
    torch.testing.assert_close(gradients[torch.float32], gradients[torch.float64], atol=1e-5, rtol=0)


def test_larger_alpha_is_sparser():
    scores = torch.randn(200, 20, generator=torch.Generator().manual_seed(9))
    support = [(alpha_entmax(scores, alpha) > 0).sum().item() for alpha in [1.0, 1.1, 1.5, 1.75, 2.0, 3.0, 8.0]]
    assert support[0] == scores.numel() and all(b <= a for a, b in zip(support, support[1:])) and support[-1] < support[1]


def test_one_alpha_per_head_broadcasts_to_its_slices():
    scores = torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(10))
    per_head = torch.tensor([1.2, 2.0, 3.5]).view(3, 1, 1)
    weights = alpha_entmax(scores, per_head)
    for head, alpha in enumerate(per_head.flatten().tolist()):
        torch.testing.assert_close(weights[:, head], alpha_entmax(scores[:, head], alpha), atol=1e-6, rtol=0)
    along_2 = alpha_entmax(scores.transpose(2, 3), per_head, dim=2)
    torch.testing.assert_close(along_2, weights.transpose(2, 3), atol=1e-6, rtol=0)


@pytest.mark.parametrize("alpha", CASES)
def test_all_masked_row_gives_zero_gradients_to_scores_and_alpha(alpha):
    scores = torch.randn(3, 5, generator=torch.Generator().manual_seed(13))
    scores[1] = -INF
    scores.requires_grad_(True)
    alphas = torch.full((3, 1), alpha, requires_grad=True)
    weights = alpha_entmax(scores, alphas)
    assert (weights[1] == 0).all()
    torch.testing.assert_close(weights[[0, 2]].sum(1), torch.ones(2))
    (weights * torch.randn(3, 5, generator=torch.Generator().manual_seed(14))).sum().backward()
    assert torch.isfinite(scores.grad).all() and (scores.grad[1] == 0).all()
    assert torch.isfinite(alphas.grad).all() and alphas.grad[1] == 0


@pytest.mark.parametrize("alpha", CASES)
def test_huge_and_wide_ranging_scores_give_finite_gradients_to_scores_and_alpha(alpha):
    generator = torch.Generator().manual_seed(17)
    scores = torch.cat([torch.tensor([[1e4, 0.0, -1e4, 3.0], [1e4, 1e4, -1e4, 0.0]]),
                        torch.randn(4, 4, generator=generator) * 1e3, torch.randn(4, 4, generator=generator) * 1e-6])
    scores.requires_grad_(True)
    alphas = torch.full((10, 1), alpha, requires_grad=True)
    weights = alpha_entmax(scores, alphas)
    torch.testing.assert_close(weights.sum(1), torch.ones(10))
    assert weights[0, 0] == 1 and weights[1, 0] == weights[1, 1] == 0.5
    (weights * torch.randn(10, 4, generator=generator)).sum().backward()
    assert torch.isfinite(scores.grad).all() and torch.isfinite(alphas.grad).all()


@pytest.mark.parametrize("alpha", [0.5, 0.0, -1.0, float("nan"), INF, torch.tensor([1.2, 0.9]),
                                   torch.tensor(float("nan")), torch.tensor(INF)])
def test_invalid_alpha_raises_value_error_naming_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        alpha_entmax(torch.zeros(2, 3), alpha)


@pytest.mark.parametrize("alpha", [True, "1.5", None, torch.tensor(2)])
def test_alpha_of_the_wrong_type_raises_type_error_naming_alpha(alpha):
    with pytest.raises(TypeError, match="alpha"):
        alpha_entmax(torch.zeros(2, 3), alpha)


def test_alpha_that_does_not_broadcast_to_the_slices_is_named():
    with pytest.raises(ValueError, match=r"alpha of shape \(3,\) does not broadcast .* shape \(2, 1\)"):
        alpha_entmax(torch.zeros(2, 3), torch.tensor([1.5, 1.5, 1.5]))
    with pytest.raises(ValueError, match=r"alpha of shape \(2, 3\)"):  # one α per entry, not per slice
        alpha_entmax(torch.zeros(2, 3), torch.full((2, 3), 1.5))


@pytest.mark.parametrize("n_iter", [0, -3, 2.5])
def test_invalid_n_iter_raises(n_iter):
    with pytest.raises(ValueError, match="n_iter"):
        alpha_entmax(torch.zeros(2, 3), 1.7, n_iter=n_iter)


def test_module_twin_fixed_and_learnable():
    scores = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(18))
    assert torch.equal(AlphaEntmax(1.7, dim=1)(scores), alpha_entmax(scores, 1.7, dim=1))
    assert list(AlphaEntmax(1.7).parameters()) == []
    module = AlphaEntmax(1.7, learnable=True)
    assert [name for name, _ in module.named_parameters()] == ["alpha_raw"]
    torch.testing.assert_close(module.alpha, torch.tensor(1.7))
    torch.testing.assert_close(module(scores), alpha_entmax(scores, 1.7), atol=1e-6, rtol=0)
    (module(scores) * torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(19))).sum().backward()
    assert module.alpha_raw.grad is not None and module.alpha_raw.grad != 0
    with torch.no_grad():
        module.alpha_raw.fill_(-200.0)  # any update keeps α ≥ 1; here 1 + softplus underflows to exactly 1
    assert module.alpha == 1 and torch.equal(module(scores), softmax(scores))
    assert "alpha=1.7, dim=-1, learnable=False" in repr(AlphaEntmax(1.7))
    with pytest.raises(ValueError, match="alpha must be > 1 when learnable"):
        AlphaEntmax(1.0, learnable=True)
    with pytest.raises(ValueError, match="alpha"):
        AlphaEntmax(0.5)


def test_non_finite_upstream_gradient_where_the_weight_is_zero_is_ignored():
    """A weight that is exactly 0 passes no gradient, to the scores or to α: inf · 0 must not become NaN."""
    scores = torch.tensor([[1.0, -5.0, 1.0, -7.0]], dtype=torch.float64, requires_grad=True)
    upstream = torch.tensor([[1.0, INF, 2.0, float("nan")]], dtype=torch.float64)
    alphas = _per_row(1.7, 1)
    weights = alpha_entmax(scores, alphas)
    assert weights[0, 1] == 0 and weights[0, 3] == 0
    gradients = torch.autograd.grad(weights, (scores, alphas), upstream)
    expected = torch.autograd.grad(alpha_entmax(scores, alphas), (scores, alphas), upstream.nan_to_num(0.0, 0.0))
    for gradient, reference in zip(gradients, expected):
        torch.testing.assert_close(gradient, reference)


@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.float32, 1e-6), (torch.float64, 1e-13)])
def test_exp_remainder_is_accurate_on_both_sides_of_its_switch_to_the_series(dtype, tolerance):
    """φ(x) = (eˣ − 1 − x)/x², the α-gradient's building block, against 50-digit decimal arithmetic."""
    from decimal import Decimal, localcontext

    from sparse_tutorial.projections.alpha_entmax import _exp_remainder

    points = torch.logspace(-8, 1.5, 200, dtype=torch.float64).to(dtype)
    with localcontext() as context:
        context.prec = 50
        exact = torch.tensor([float((x.exp() - 1 - x) / (x * x)) for x in map(Decimal, points.tolist())],
                             dtype=torch.float64)
    relative_error = (_exp_remainder(points).double() - exact).abs() / exact
    assert relative_error.max() <= tolerance, relative_error.max()
    assert _exp_remainder(torch.zeros(1, dtype=dtype)).item() == 0.5
