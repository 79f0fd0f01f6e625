"""Tests of sparse_tutorial.fused: the C++ sparsemax equals the eager one, edge cases, fallback."""
from __future__ import annotations

import logging
import warnings

import entmax
import pytest
import torch

from sparse_tutorial import Attention, fused, sparsemax
from sparse_tutorial.fused import FusedSparsemax, fused_sparsemax

INF = float("inf")


def _scores(*shape: int, scale: float = 1.0, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype) * scale


def _assert_matches_eager(scores: torch.Tensor, upstream: torch.Tensor, grad_atol: float = 1e-5) -> None:
    """fused_sparsemax's weights (to 1e-6) and input gradient for ``upstream`` equal the eager sparsemax's."""
    weights, grads = [], []
    for projection in (fused_sparsemax, sparsemax):
        leaf = scores.clone().requires_grad_(True)
        weights.append(projection(leaf))
        grads.append(torch.autograd.grad(weights[-1], leaf, upstream)[0])
    torch.testing.assert_close(weights[0], weights[1], atol=1e-6, rtol=0)
    torch.testing.assert_close(grads[0], grads[1], atol=grad_atol, rtol=0)


@pytest.mark.parametrize("shape", [(4096, 32), (64, 128), (8, 1024), (3, 4, 5)])
@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_equals_eager_and_entmax_sparsemax(shape, scale):
    scores = _scores(*shape, scale=scale)
    weights = fused_sparsemax(scores)
    torch.testing.assert_close(weights, sparsemax(scores), atol=1e-6, rtol=0)
    torch.testing.assert_close(weights, entmax.sparsemax(scores, -1), atol=1e-6, rtol=0)


@pytest.mark.parametrize("length", [1, 2, 15, 16, 17, 63, 64, 65, 100, 5000])
@pytest.mark.parametrize("rows", [1, 15, 16, 17, 33])
def test_both_layouts_with_partial_blocks_and_vectors(rows, length):
    """Rows up to 64 long go 16 to a block (one per lane), longer ones in vectors; neither need fill up."""
    _assert_matches_eager(_scores(rows, length, scale=3), _scores(rows, length, seed=1))


@pytest.mark.parametrize("length", [40, 1024])
def test_flat_rows_that_need_many_steps_are_exact(length):
    scores = _scores(64, length, scale=0.001)  # a large support: many Michelot steps, a different count per row
    weights = fused_sparsemax(scores)
    assert (weights > 0).sum(1).min() > length // 2
    torch.testing.assert_close(weights, sparsemax(scores), atol=1e-6, rtol=0)


def test_the_portable_build_gives_the_same_results(monkeypatch):
    """Without -march=native and OpenMP (the second set of flags, for compilers that lack them)."""
    monkeypatch.setattr(fused, "COMPILER_FLAGS", fused.COMPILER_FLAGS[-1:])
    monkeypatch.setattr(fused, "_KERNEL", fused._Kernel())
    for shape in [(33, 20), (5, 300)]:
        _assert_matches_eager(_scores(*shape, scale=3), _scores(*shape, seed=1))
        assert fused._KERNEL.library is not None


def test_threads_change_nothing():
    scores = _scores(2048, 48)  # enough scores for the kernel to use every thread
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        alone = fused_sparsemax(scores)
        torch.set_num_threads(max(2, threads))
        assert torch.equal(fused_sparsemax(scores), alone)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_any_dim_of_a_non_contiguous_input(dim):
    scores = _scores(6, 7, 8).transpose(0, 2)
    torch.testing.assert_close(fused_sparsemax(scores, dim=dim), sparsemax(scores, dim=dim), atol=1e-6, rtol=0)


def test_masked_and_all_masked_rows_give_zeros_and_zero_gradients():
    scores = _scores(4, 6).masked_fill(torch.tensor([[False] * 3 + [True] * 3] * 2 + [[True] * 6] * 2), -INF)
    leaf = scores.clone().requires_grad_(True)
    weights = fused_sparsemax(leaf)
    assert (weights[:2, 3:] == 0).all() and (weights[2:] == 0).all()
    torch.testing.assert_close(weights[:2].sum(1), torch.ones(2))
    (weights * _scores(4, 6, seed=1)).sum().backward()
    assert torch.isfinite(leaf.grad).all() and (leaf.grad[2:] == 0).all()


def test_ties_and_huge_finite_scores():
    scores = torch.tensor([[1.0, 1.0, 1.0, 0.0], [3e38, -3e38, 3e38, 0.0], [0.5, 0.5, -0.5, -0.5]])
    torch.testing.assert_close(fused_sparsemax(scores), sparsemax(scores), atol=1e-6, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_is_computed_in_float32(dtype):
    scores = _scores(16, 40, scale=3).to(dtype)
    weights = fused_sparsemax(scores)
    assert weights.dtype == dtype
    torch.testing.assert_close(weights.float(), sparsemax(scores.float()).to(dtype).float(), atol=1e-3, rtol=0)


def test_gradient_equals_eager_and_passes_gradcheck():
    _assert_matches_eager(_scores(32, 20, scale=2), _scores(32, 20, seed=1), grad_atol=1e-6)
    leaf = _scores(3, 7, scale=2).double().requires_grad_(True)
    assert torch.autograd.gradcheck(fused_sparsemax, (leaf,))


@pytest.mark.parametrize("bad, message", [(float("nan"), "NaN"), (INF, r"\+inf")])
def test_nan_and_plus_inf_are_named(bad, message):
    scores = _scores(4, 5)
    scores[2, 3] = bad
    with pytest.raises(ValueError, match=message):
        fused_sparsemax(scores)


def test_empty_dimension_and_integer_scores_are_rejected():
    with pytest.raises(ValueError, match="empty dimension"):
        fused_sparsemax(torch.zeros(3, 0))
    with pytest.raises(TypeError, match="floating-point"):
        fused_sparsemax(torch.zeros(3, 4, dtype=torch.long))


@pytest.mark.parametrize("shape", [(1, 5), (5, 1), (1, 1), (0, 4)])
def test_single_rows_length_one_and_empty_batches(shape):
    scores = _scores(*shape)
    torch.testing.assert_close(fused_sparsemax(scores), sparsemax(scores))


def test_compilation_happens_once_and_is_logged(monkeypatch, caplog):
    monkeypatch.setattr(fused, "_KERNEL", fused._Kernel())
    with caplog.at_level(logging.INFO, logger="sparse_tutorial.fused"):
        fused_sparsemax(_scores(4, 5))
        fused_sparsemax(_scores(4, 6, dtype=torch.float64))
    assert sum("compiling" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("compiler, message", [(None, "no C.. compiler found"), ("false", "false failed")])
def test_without_a_working_compiler_it_is_eager_with_one_warning(monkeypatch, compiler, message):
    monkeypatch.setattr(fused, "_KERNEL", fused._Kernel())
    monkeypatch.setattr(fused, "_compiler", lambda: compiler)
    scores = _scores(8, 9)
    with pytest.warns(RuntimeWarning, match=message):
        weights = fused_sparsemax(scores)
    torch.testing.assert_close(weights, sparsemax(scores))
    with warnings.catch_warnings():  # the second call is quiet
        warnings.simplefilter("error")
        torch.testing.assert_close(fused_sparsemax(scores), sparsemax(scores))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_it_is_the_eager_sparsemax():
    scores = _scores(8, 40).cuda()
    assert torch.equal(fused_sparsemax(scores), sparsemax(scores))


def test_differentiating_twice_is_refused():
    leaf, upstream = _scores(3, 5).requires_grad_(True), _scores(3, 5, seed=1).requires_grad_(True)
    (grad,) = torch.autograd.grad(fused_sparsemax(leaf), leaf, upstream, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        grad.sum().backward()


def test_module_twin_and_use_in_attention():
    scores = _scores(2, 3, 9)
    torch.testing.assert_close(FusedSparsemax(dim=1)(scores), sparsemax(scores, dim=1), atol=1e-6, rtol=0)
    attention = Attention("dot", projection=fused_sparsemax)
    query, keys = _scores(2, 4), _scores(2, 9, 4, seed=1)
    mask = torch.ones(2, 9, dtype=torch.bool)
    context, weights = attention(query, keys, mask=mask)
    reference = Attention("dot", projection="sparsemax")(query, keys, mask=mask)[1]
    torch.testing.assert_close(weights, reference, atol=1e-6, rtol=0)
