"""Tests of sparse_tutorial.projections: simplex, invariances, masks, edge cases, gradients, references.

Every test runs twice: with the compiled CPU kernel of sparse_tutorial.projections.fused (what a user gets) and with
the eager PyTorch code (what runs on a GPU or without a compiler).
"""
from __future__ import annotations

import functools

import entmax
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sparse_tutorial.projections import fused
from sparse_tutorial.projections.alpha_entmax import alpha_entmax
from sparse_tutorial.projections import (
    PROJECTIONS,
    Entmax15,
    GumbelSoftmax,
    Softmax,
    SoftmaxWithTemperature,
    SparsegenLin,
    Sparsemax,
    entmax15,
    get_projection,
    gumbel_softmax,
    softmax,
    softmax_with_temperature,
    sparsegen_lin,
    sparsemax,
)

INF = float("inf")


@pytest.fixture(autouse=True, params=["kernel", "eager"])
def projection_path(request):
    """Run the test on the compiled kernel and on the eager code."""
    if request.param == "kernel":
        assert fused.KERNEL.ready(), fused.KERNEL.failure
        yield request.param
    else:
        with fused.eager():
            yield request.param


def _seeded_gumbel(scores, dim=-1, hard=False):
    """Gumbel-softmax with fresh, fixed noise on every call, so that it is a deterministic function."""
    return gumbel_softmax(scores, temperature=0.7, hard=hard, dim=dim, generator=torch.Generator().manual_seed(0))


DETERMINISTIC = {
    "softmax": softmax,
    "temperature": functools.partial(softmax_with_temperature, temperature=0.5),
    "sparsemax": sparsemax,
    "sparsegen": functools.partial(sparsegen_lin, lam=0.4),
    "sparsegen_dense": functools.partial(sparsegen_lin, lam=-2.0),
    "entmax15": entmax15,
    # α-entmax by bisection (a number α without a closed form, or any tensor α; a tensor α = 1 is softmax):
    "alpha_entmax_1.25": functools.partial(alpha_entmax, alpha=1.25),
    "alpha_entmax_3": functools.partial(alpha_entmax, alpha=3.0),
    "alpha_entmax_tensor_1.5": functools.partial(alpha_entmax, alpha=torch.tensor(1.5)),
    "alpha_entmax_tensor_1": functools.partial(alpha_entmax, alpha=torch.tensor(1.0)),
}
ALL = {**DETERMINISTIC, "gumbel": _seeded_gumbel, "gumbel_hard": functools.partial(_seeded_gumbel, hard=True)}
SPARSE = {"sparsemax": sparsemax, "sparsegen": DETERMINISTIC["sparsegen"], "entmax15": entmax15}


def _assert_on_simplex(weights: torch.Tensor, dim: int) -> None:
    assert torch.isfinite(weights).all()
    assert (weights >= 0).all()
    torch.testing.assert_close(weights.sum(dim), torch.ones_like(weights.sum(dim)), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_output_on_simplex_any_dim_and_batch_shape(name, dim):
    scores = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(1)) * 3
    _assert_on_simplex(ALL[name](scores, dim=dim), dim)


@pytest.mark.parametrize("name", ALL)
def test_invariant_to_adding_a_constant(name):
    scores = torch.randn(6, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    fn = ALL[name]
    torch.testing.assert_close(fn(scores + 123.0), fn(scores), atol=1e-10, rtol=0)


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_dim_anywhere_and_non_contiguous_match_last_dim(name):
    fn = DETERMINISTIC[name]
    scores = torch.randn(4, 7, 3, generator=torch.Generator().manual_seed(3)) * 2
    along_1 = fn(scores, dim=1)
    along_last = fn(scores.movedim(1, -1).contiguous(), dim=-1).movedim(-1, 1)
    torch.testing.assert_close(along_1, along_last, atol=1e-6, rtol=0)
    non_contiguous = scores.transpose(0, 2)
    assert not non_contiguous.is_contiguous()
    torch.testing.assert_close(fn(non_contiguous, dim=1), along_1.transpose(0, 2), atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", ["gumbel", "gumbel_hard"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gumbel_non_contiguous_equals_its_contiguous_copy(name, dim):
    # The noise is drawn in the logical shape, not the input's memory layout, so with identically seeded
    # generators a transposed view and its contiguous copy see the same noise at the same positions.
    scores = torch.randn(4, 7, 3, generator=torch.Generator().manual_seed(3)) * 2
    non_contiguous = scores.transpose(0, 2)
    assert not non_contiguous.is_contiguous()
    weights = ALL[name](non_contiguous, dim=dim)
    assert torch.equal(weights, ALL[name](non_contiguous.contiguous(), dim=dim))
    _assert_on_simplex(weights, dim)


@pytest.mark.parametrize("name", ALL)
def test_masked_positions_get_exactly_zero(name):
    generator = torch.Generator().manual_seed(4)
    scores = torch.randn(8, 10, generator=generator) * 2
    keep = torch.rand(8, 10, generator=generator) > 0.5
    keep[:, 0] = True
    weights = ALL[name](scores.masked_fill(~keep, -INF))
    assert (weights[~keep] == 0).all()
    _assert_on_simplex(weights, -1)


@pytest.mark.parametrize("name", ALL)
def test_all_masked_row_gives_zeros_and_zero_gradient(name):
    scores = torch.randn(3, 5, generator=torch.Generator().manual_seed(5))
    scores[1] = -INF
    scores.requires_grad_(True)
    weights = ALL[name](scores)
    assert (weights[1] == 0).all()
    _assert_on_simplex(weights[[0, 2]], -1)
    (weights * torch.randn(3, 5, generator=torch.Generator().manual_seed(6))).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert (scores.grad[1] == 0).all()


@pytest.mark.parametrize("name", ALL)
def test_nan_raises_value_error(name):
    scores = torch.zeros(2, 3)
    scores[1, 2] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        ALL[name](scores)


@pytest.mark.parametrize("name", ALL)
def test_plus_inf_raises_value_error(name):
    with pytest.raises(ValueError, match=r"\+inf"):
        ALL[name](torch.tensor([[0.0, INF]]))


@pytest.mark.parametrize("name", ALL)
def test_finite_huge_values(name):
    scores = torch.tensor([[1e30, 0.0, -1e30], [3e38, -3e38, 0.0], [-3e38, -3e38, -3e38], [3e38, 3e38, 1.0]],
                          requires_grad=True)
    weights = ALL[name](scores)
    _assert_on_simplex(weights, -1)
    assert weights[0, 0] == 1 and weights[1, 0] == 1
    weights.sum().backward()
    assert torch.isfinite(scores.grad).all()


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_computes_in_float32_returns_input_dtype(name, dtype):
    scores = (torch.randn(5, 6, generator=torch.Generator().manual_seed(7)) * 3).to(dtype)
    scores[0, :3] = -INF
    weights = ALL[name](scores)
    assert weights.dtype == dtype
    assert torch.equal(weights, ALL[name](scores.float()).to(dtype))


@pytest.mark.parametrize("name", ALL)
def test_length_one_rows(name):
    scores = torch.randn(4, 1, generator=torch.Generator().manual_seed(8)).requires_grad_(True)
    weights = ALL[name](scores)
    assert torch.equal(weights, torch.ones(4, 1))
    weights.sum().backward()
    assert torch.allclose(scores.grad, torch.zeros(4, 1))


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_ties_give_equal_weights(name):
    weights = DETERMINISTIC[name](torch.tensor([[0.0, 0.0, 0.0, 0.0], [2.0, 2.0, 1.0, -5.0]]))
    torch.testing.assert_close(weights[0], torch.full((4,), 0.25))
    assert weights[1, 0] == weights[1, 1]
    _assert_on_simplex(weights, -1)


def test_sparsemax_of_tied_top_pair_is_half_half():
    assert torch.equal(sparsemax(torch.tensor([1.0, 1.0, 0.0, -5.0])), torch.tensor([0.5, 0.5, 0.0, 0.0]))


@pytest.mark.parametrize("name", [name for name in ALL if name != "gumbel_hard"])
def test_gradcheck_float64(name):
    # Scores on a grid spaced 0.37 apart keep every entry far (> 1e-3) from sparsemax's kinks z_j = τ.
    generator = torch.Generator().manual_seed(9)
    scores = (torch.randperm(24, generator=generator).double() * 0.37).view(4, 6) / 4
    scores[0, 5] = -INF
    scores.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda s: ALL[name](s, dim=-1), (scores,))
    assert torch.autograd.gradcheck(lambda s: ALL[name](s, dim=0), (scores,))


def test_sparsemax_backward_is_the_closed_form_jacobian():
    scores = torch.tensor([1.2, 0.9, 0.1, -1.0, 0.85], dtype=torch.float64)
    weights = sparsemax(scores)
    support = (weights > 0).double()
    expected = torch.diag(support) - torch.outer(support, support) / support.sum()
    jacobian = torch.autograd.functional.jacobian(sparsemax, scores)
    torch.testing.assert_close(jacobian, expected)


@pytest.mark.parametrize("shape", [(1, 2), (16, 5), (64, 33), (8, 1000), (3, 4, 257)])
@pytest.mark.parametrize("scale", [0.05, 1.0, 20.0])
@pytest.mark.parametrize("dim", [-1, 0])
def test_equals_entmax_package(shape, scale, dim):
    scores = torch.randn(*shape, generator=torch.Generator().manual_seed(10)) * scale
    torch.testing.assert_close(sparsemax(scores, dim), entmax.sparsemax(scores, dim), atol=1e-6, rtol=0)
    torch.testing.assert_close(entmax15(scores, dim), entmax.entmax15(scores, dim), atol=1e-6, rtol=0)


def test_gradients_equal_entmax_package():
    scores = torch.randn(32, 50, dtype=torch.float64, generator=torch.Generator().manual_seed(11)) * 2
    upstream = torch.randn(32, 50, dtype=torch.float64, generator=torch.Generator().manual_seed(12))
    for ours, theirs in [(sparsemax, entmax.sparsemax), (entmax15, entmax.entmax15)]:
        mine, reference = scores.clone().requires_grad_(), scores.clone().requires_grad_()
        (ours(mine) * upstream).sum().backward()
        (theirs(reference, -1) * upstream).sum().backward()
        torch.testing.assert_close(mine.grad, reference.grad, atol=1e-10, rtol=0)


def test_sparsegen_lin():
    scores = torch.randn(10, 12, generator=torch.Generator().manual_seed(13)) * 2
    assert torch.equal(sparsegen_lin(scores, lam=0.0), sparsemax(scores))
    torch.testing.assert_close(sparsegen_lin(scores, lam=0.5), sparsemax(scores * 2), atol=1e-6, rtol=0)
    assert (sparsegen_lin(scores, lam=0.8) > 0).sum() <= (sparsemax(scores) > 0).sum()
    for lam in [1.0, 1.5]:
        with pytest.raises(ValueError, match="lam"):
            sparsegen_lin(scores, lam=lam)


def test_sparse_projections_put_exact_zeros_softmax_does_not():
    scores = torch.randn(20, 30, generator=torch.Generator().manual_seed(14)) * 3
    for fn in SPARSE.values():
        assert (fn(scores) == 0).any()
    assert (softmax(scores) > 0).all()


def test_temperature_sharpens():
    scores = torch.randn(5, 8, generator=torch.Generator().manual_seed(15))
    assert (softmax_with_temperature(scores, 0.2).amax(-1) > softmax(scores).amax(-1)).all()
    torch.testing.assert_close(softmax_with_temperature(scores, 1.0), softmax(scores))
    for bad in [0.0, -1.0, float("nan"), INF]:
        with pytest.raises(ValueError, match="temperature"):
            softmax_with_temperature(scores, bad)


def test_gumbel_reproducible_with_generator_and_random_without():
    scores = torch.randn(4, 6, generator=torch.Generator().manual_seed(16))
    first = gumbel_softmax(scores, generator=torch.Generator().manual_seed(1))
    again = gumbel_softmax(scores, generator=torch.Generator().manual_seed(1))
    other = gumbel_softmax(scores, generator=torch.Generator().manual_seed(2))
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


def test_gumbel_hard_is_one_hot_with_straight_through_gradient():
    scores = torch.randn(6, 5, generator=torch.Generator().manual_seed(17), requires_grad=True)
    upstream = torch.randn(6, 5, generator=torch.Generator().manual_seed(18))
    hard = _seeded_gumbel(scores, hard=True)
    assert set(hard.detach().unique().tolist()) == {0.0, 1.0}
    assert torch.equal(hard.detach().sum(-1), torch.ones(6))
    soft = _seeded_gumbel(scores)
    assert torch.equal(hard.detach().argmax(-1), soft.detach().argmax(-1))
    (grad_hard,) = torch.autograd.grad((hard * upstream).sum(), scores)
    (grad_soft,) = torch.autograd.grad((soft * upstream).sum(), scores)
    torch.testing.assert_close(grad_hard, grad_soft)


def test_gumbel_never_samples_masked_positions():
    generator = torch.Generator().manual_seed(19)
    scores = torch.zeros(2000, 6)
    scores[:, :3] = -INF
    samples = gumbel_softmax(scores, hard=True, generator=generator)
    assert samples[:, :3].sum() == 0
    assert (samples[:, 3:].sum(0) > 500).all()


def test_gumbel_sample_frequencies_follow_softmax():
    scores = torch.tensor([1.0, 0.0, -1.0]).expand(20000, 3)
    samples = gumbel_softmax(scores, hard=True, generator=torch.Generator().manual_seed(20))
    torch.testing.assert_close(samples.mean(0), torch.softmax(torch.tensor([1.0, 0.0, -1.0]), 0),
                               atol=0.015, rtol=0)


def test_bad_input_types():
    with pytest.raises(TypeError, match="scores"):
        sparsemax(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="scores"):
        softmax(torch.tensor(1.0))
    with pytest.raises(TypeError, match="scores"):
        entmax15([1.0, 2.0])


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize(("shape", "dim"), [((3, 0), -1), ((0,), 0), ((2, 0, 4), 1)])
def test_empty_normalised_dimension_raises_value_error(name, shape, dim):
    with pytest.raises(ValueError, match="scores has an empty dimension"):
        ALL[name](torch.zeros(shape), dim=dim)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize(("shape", "dim"), [((3, 0), 0), ((0, 3), -1), ((2, 0, 4), 2)])
def test_empty_batch_gives_empty_weights(name, shape, dim):
    # Only the normalised dimension must be non-empty; an empty batch is no error.
    assert ALL[name](torch.zeros(shape), dim=dim).shape == shape


def test_check_floating_names_the_empty_dimension():
    from sparse_tutorial._validation import check_floating

    check_floating(torch.zeros(0, 3), "scores", dim=-1)
    with pytest.raises(ValueError, match=r"scores has an empty dimension 0 \(shape \(0, 3\)\)"):
        check_floating(torch.zeros(0, 3), "scores", dim=0)
    with pytest.raises(IndexError, match="out of range"):
        check_floating(torch.zeros(0, 3), "scores", dim=2)


def test_registry_and_get_projection():
    assert set(PROJECTIONS) == {"softmax", "sparsemax", "sparsegen", "entmax15", "temperature", "gumbel",
                                "sparsegen_lin", "softmax_with_temperature", "gumbel_softmax", "alpha_entmax",
                                "entmax_bisect"}
    assert all(PROJECTIONS[function.__name__] is function for function in PROJECTIONS.values())
    scores = torch.randn(3, 5, generator=torch.Generator().manual_seed(21))
    assert torch.equal(get_projection("sparsemax")(scores, dim=-1), sparsemax(scores))
    assert torch.equal(get_projection("sparsegen", lam=0.5)(scores), sparsegen_lin(scores, lam=0.5))
    assert torch.equal(get_projection("temperature", temperature=0.3)(scores, dim=0),
                       softmax_with_temperature(scores, 0.3, dim=0))
    gumbel = get_projection("gumbel", temperature=0.5, hard=True)
    assert torch.equal(gumbel(scores).sum(-1), torch.ones(3))
    with pytest.raises(ValueError, match="valid names.*entmax15"):
        get_projection("sparsemaxx")
    with pytest.raises(ValueError, match="tempreature"):
        get_projection("temperature", tempreature=0.5)
    with pytest.raises(ValueError, match="lam"):
        get_projection("softmax", lam=0.5)
    with pytest.raises(ValueError, match="temperature"):
        get_projection("gumbel", temperature=0.0)
    with pytest.raises(ValueError, match="lam"):
        get_projection("sparsegen", lam=1.0)


def test_module_twins_equal_functions():
    scores = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(22))
    pairs = [(Softmax(dim=1), softmax(scores, 1)), (Sparsemax(dim=0), sparsemax(scores, 0)),
             (Entmax15(), entmax15(scores)), (SparsegenLin(lam=0.3), sparsegen_lin(scores, 0.3)),
             (SoftmaxWithTemperature(0.4), softmax_with_temperature(scores, 0.4)),
             (GumbelSoftmax(0.5, generator=torch.Generator().manual_seed(3)),
              gumbel_softmax(scores, 0.5, generator=torch.Generator().manual_seed(3)))]
    for module, expected in pairs:
        assert torch.equal(module(scores), expected)
    with pytest.raises(ValueError, match="temperature"):
        GumbelSoftmax(temperature=-1.0)


def test_every_public_name_is_importable_from_projections():
    """The code lives in the package's modules by idea (issues 21, 31), but readers import every projection,
    its module twin and the registry from sparse_tutorial.projections, which lists them in __all__."""
    import sparse_tutorial.projections as projections

    public = {"Projection", "PROJECTIONS", "get_projection", "softmax", "softmax_with_temperature", "gumbel_softmax",
              "sparsemax", "sparsegen_lin", "entmax15", "alpha_entmax", "entmax_bisect", "Softmax",
              "SoftmaxWithTemperature", "GumbelSoftmax", "Sparsemax", "SparsegenLin", "Entmax15", "AlphaEntmax",
              "EntmaxBisect"}
    assert sorted(public - set(vars(projections))) == []
    assert set(projections.__all__) == public


score_rows = st.lists(st.floats(-50, 50, allow_nan=False, width=64), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(score_rows, st.floats(-1e3, 1e3, width=64))
def test_property_simplex_and_shift_invariance(values, shift):
    scores = torch.tensor(values, dtype=torch.float64)
    for fn in DETERMINISTIC.values():
        weights = fn(scores)
        _assert_on_simplex(weights, -1)
        torch.testing.assert_close(fn(scores + shift), weights, atol=1e-9, rtol=0)


@settings(max_examples=60, deadline=None)
@given(score_rows)
def test_property_sparsemax_satisfies_projection_kkt(values):
    # p = sparsemax(z) iff there is a τ with p_j = z_j − τ on the support and z_j ≤ τ off it.
    scores = torch.tensor(values, dtype=torch.float64)
    weights = sparsemax(scores)
    support = weights > 0
    tau = scores[support] - weights[support]
    torch.testing.assert_close(tau, tau[:1].expand_as(tau), atol=1e-9, rtol=0)
    assert (scores[~support] <= tau[0] + 1e-9).all()


@settings(max_examples=60, deadline=None)
@given(score_rows)
def test_property_entmax15_satisfies_kkt(values):
    # p = entmax15(z) iff there is a τ with sqrt(p_j) = z_j/2 − τ on the support and z_j/2 ≤ τ off it.
    scores = torch.tensor(values, dtype=torch.float64)
    weights = entmax15(scores)
    support = weights > 0
    tau = scores[support] / 2 - weights[support].sqrt()
    torch.testing.assert_close(tau, tau[:1].expand_as(tau), atol=1e-9, rtol=0)
    assert (scores[~support] / 2 <= tau[0] + 1e-9).all()


@settings(max_examples=40, deadline=None)
@given(score_rows, st.lists(st.floats(0, 1, width=64), min_size=12, max_size=12))
def test_property_sparsemax_is_the_closest_point_of_the_simplex(values, raw_point):
    # Variational inequality of a Euclidean projection: <z − p, q − p> ≤ 0 for every q on the simplex.
    scores = torch.tensor(values, dtype=torch.float64)
    point = torch.tensor(raw_point[: len(values)], dtype=torch.float64) + 1e-3
    point = point / point.sum()
    weights = sparsemax(scores)
    assert torch.dot(scores - weights, point - weights) <= 1e-9
    assert (scores - weights).norm() <= (scores - point).norm() + 1e-9


def test_both_threshold_paths_are_exercised_and_exact():
    # Spread-out scores: few candidates per row, the search runs on a compacted matrix; nearly equal
    # scores: most entries are candidates and the search runs on the full rows. Both must be exact.
    from sparse_tutorial.projections.threshold_candidates import _compact_candidates

    with fused.eager():  # the compaction is the eager code's
        _check_both_threshold_paths(_compact_candidates)


def _check_both_threshold_paths(_compact_candidates) -> None:
    for scale, compacted in [(20.0, True), (0.01, False)]:
        scores = torch.randn(64, 300, generator=torch.Generator().manual_seed(23)) * scale
        row_max = scores.amax(1, keepdim=True)
        assert (_compact_candidates(scores, row_max, torch.full_like(row_max, -1.0))[1] is not None) == compacted
        scores[3] = -INF
        scores[5, :150] = -INF
        reference = entmax.sparsemax(scores[:, :].clone().masked_fill_(torch.isinf(scores), -1e9), -1)
        reference[3] = 0
        torch.testing.assert_close(sparsemax(scores), reference, atol=1e-6, rtol=0)


def test_entmax15_sort_fallback_is_exact(monkeypatch):
    import sparse_tutorial.projections.entmax_eager as entmax_eager

    scores = torch.randn(16, 40, generator=torch.Generator().manual_seed(24)) * 3
    expected = entmax15(scores)
    monkeypatch.setattr(fused, "KERNEL", fused.Kernel())
    monkeypatch.setattr(fused.KERNEL, "enabled", False)  # the fallback is the eager code's
    monkeypatch.setattr(entmax_eager, "_ENTMAX_ITERATIONS", 1)
    torch.testing.assert_close(entmax15(scores), expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(entmax15(scores), entmax.entmax15(scores, -1), atol=1e-6, rtol=0)
    scores[2] = -INF
    scores[4, 5:] = -INF
    weights = entmax15(scores)
    assert (weights[2] == 0).all() and (weights[4, 5:] == 0).all()
    _assert_on_simplex(weights[[0, 1, 3, 4]], -1)


@pytest.mark.parametrize("length", [255, 256, 257, 1000])
def test_many_ties_long_rows_equal_entmax_package(length):
    # Quantised scores tie everywhere, also at the threshold and across blocks of the lower bound.
    generator = torch.Generator().manual_seed(25)
    for step in [0.25, 0.05]:
        scores = torch.randint(-6, 7, (32, length), generator=generator).float() * step
        torch.testing.assert_close(sparsemax(scores), entmax.sparsemax(scores, -1), atol=1e-6, rtol=0)
        torch.testing.assert_close(entmax15(scores), entmax.entmax15(scores, -1), atol=1e-6, rtol=0)


def _sparsemax_by_sorting(scores: torch.Tensor) -> torch.Tensor:
    """Float64 reference (Martins & Astudillo 2016, Algorithm 1) for the rows of ``scores``."""
    z = scores.double()
    ordered = z.sort(-1, descending=True).values
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    shifted_cumsum = ordered.cumsum(-1) - 1
    support_size = ((ordered - shifted_cumsum / k) > 0).sum(-1, keepdim=True)
    return (z - shifted_cumsum.gather(-1, support_size - 1) / support_size).clamp_min(0)


@pytest.mark.parametrize("name", ["sparsemax", "entmax15"])
@pytest.mark.parametrize("length", [4096, 65536])
@pytest.mark.parametrize("scale", [1e-6, 1e-3, 1.0])
def test_float32_is_exact_to_1e_6_on_long_rows_with_any_support(name, length, scale):
    """Nearly uniform rows (attention at initialisation) have a support of all n entries and weights ~1/n;
    the old update τ + (Σ(z − τ) − 1)/k cancelled away every digit of τ (sums of 0.72 at n = 65,536). The
    error is relative to the row's largest weight: an absolute 1e-6 would pass any weights of ~1/n."""
    scores = torch.randn(3, length, generator=torch.Generator().manual_seed(26)) * scale
    reference = _sparsemax_by_sorting(scores) if name == "sparsemax" else entmax.entmax15(scores.double(), -1)
    weights = SPARSE[name](scores)
    assert weights.dtype == torch.float32
    relative_error = (weights.double() - reference).abs().amax(1) / reference.amax(1)
    assert relative_error.max() <= 1e-6, relative_error
    torch.testing.assert_close(weights.double().sum(1), torch.ones(3, dtype=torch.float64), atol=1e-5, rtol=0)
    support_size = (weights > 0).sum(1)
    if scale == 1e-6:
        assert (support_size == length).all()  # the whole row
    elif scale == 1.0:
        assert (support_size > 1).all() and (support_size < length // 2).all()  # a part of it


@pytest.mark.parametrize("name", ["sparsemax", "sparsegen", "entmax15"])
def test_non_finite_upstream_gradient_where_the_weight_is_zero_is_ignored(name):
    """A weight that is exactly 0 passes no gradient: inf or NaN upstream there must not become inf · 0 = NaN."""
    scores = torch.tensor([[1.0, -5.0, 1.0, -7.0]], dtype=torch.float64, requires_grad=True)
    upstream = torch.tensor([[1.0, INF, 2.0, float("nan")]], dtype=torch.float64)
    weights = SPARSE[name](scores)
    assert weights[0, 1] == 0 and weights[0, 3] == 0
    (grad,) = torch.autograd.grad(weights, scores, upstream)
    finite_upstream = upstream.nan_to_num(nan=0.0, posinf=0.0)
    (expected,) = torch.autograd.grad(SPARSE[name](scores), scores, finite_upstream)
    torch.testing.assert_close(grad, expected)
    if name == "sparsemax":
        torch.testing.assert_close(grad, torch.tensor([[-0.5, 0.0, 0.5, 0.0]], dtype=torch.float64))


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_negated_views_are_read_as_their_values(name):
    """``torch._neg_view`` marks a tensor negated without touching its memory; a kernel that read raw
    memory would project −x. The upstream gradient may be such a view too."""
    scores = torch.randn(6, 40, generator=torch.Generator().manual_seed(27)) * 2
    projection = DETERMINISTIC[name]
    torch.testing.assert_close(projection(torch._neg_view(scores)), projection(-scores))
    leaf = scores.clone().requires_grad_(True)
    upstream = torch.randn(6, 40, generator=torch.Generator().manual_seed(28))
    (grad,) = torch.autograd.grad(projection(leaf), leaf, torch._neg_view(upstream))
    (expected,) = torch.autograd.grad(projection(leaf), leaf, -upstream)
    torch.testing.assert_close(grad, expected)


@pytest.mark.parametrize("name", ["sparsemax", "sparsegen", "entmax15"])
def test_second_derivatives_gradgradcheck(name):
    scores = (torch.randn(3, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(29)) * 2).requires_grad_(True)
    assert torch.autograd.gradgradcheck(SPARSE[name], (scores,))
