"""The projections and the attention modules under ``torch.compile`` and ``torch.func``: no graph break, the
compiled forward and backward equal eager, ``vmap`` equals a loop, and ``jacrev`` equals the closed-form
Jacobians; the static code by sorting, which runs there (and on GPUs), equals the eager searches on every
edge case, and a NaN or ``+inf`` score, which only the eager CPU code can afford to refuse, comes out NaN.
"""
from __future__ import annotations

import functools

import pytest
import torch
from torch import nn
from torch.func import jacrev, vmap

from sparse_tutorial import (
    AlphaEntmax, MultiHeadAttention, alpha_entmax, entmax15, entmax_bisect, gumbel_softmax,
    scaled_dot_product_attention, softmax, softmax_with_temperature, sparsegen_lin, sparsemax,
)
from sparse_tutorial.projections.by_sorting import Entmax15BySorting, SparsemaxBySorting
from sparse_tutorial.projections.entmax_eager import Entmax15Function
from sparse_tutorial.projections.sparsemax_eager import SparsemaxFunction

PROJECTIONS = {
    "softmax": softmax,
    "temperature 0.5": functools.partial(softmax_with_temperature, temperature=0.5),
    "sparsemax": sparsemax,
    "sparsegen-lin 0.5": functools.partial(sparsegen_lin, lam=0.5),
    "entmax15": entmax15,
    "alpha_entmax 1.3": functools.partial(alpha_entmax, alpha=1.3),
    "alpha_entmax per row": lambda s, dim=-1: alpha_entmax(s, torch.tensor([[1.2], [1.7], [2.5]], dtype=s.dtype), dim),
    "entmax_bisect 1.7": functools.partial(entmax_bisect, alpha=1.7),
}


def _closed_form_jacobian(weights: torch.Tensor, exponent: float, temperature: float = 1.0) -> torch.Tensor:
    """``diag(g) − g gᵀ / Σg`` with ``g = p^exponent`` on the support (0 off it) over ``temperature``:
    softmax (exponent 1, where Σg = 1), sparsemax (exponent 0), α-entmax (exponent 2 − α)."""
    support = weights > 0
    g = torch.where(support, weights.clamp_min(1e-300) ** exponent, 0.0)
    return (torch.diag(g) - torch.outer(g, g) / g.sum()) / temperature


JACOBIANS = {  # name: (projection of a 1-d row, its closed-form Jacobian at that row)
    "softmax": (softmax, lambda p: _closed_form_jacobian(p, 1.0)),
    "temperature 0.5": (functools.partial(softmax_with_temperature, temperature=0.5),
                        lambda p: _closed_form_jacobian(p, 1.0, 0.5)),
    "sparsemax": (sparsemax, lambda p: _closed_form_jacobian(p, 0.0)),
    "sparsegen-lin 0.5": (functools.partial(sparsegen_lin, lam=0.5), lambda p: _closed_form_jacobian(p, 0.0, 0.5)),
    "entmax15": (entmax15, lambda p: _closed_form_jacobian(p, 0.5)),
    "alpha_entmax 1.3": (functools.partial(alpha_entmax, alpha=1.3), lambda p: _closed_form_jacobian(p, 0.7)),
}


def _scores(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype) * 2


@pytest.mark.parametrize("name", PROJECTIONS)
def test_dynamo_finds_no_graph_break_in_any_projection(name):
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(PROJECTIONS[name])(_scores(3, 7, dtype=torch.float32))
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


def test_dynamo_finds_no_graph_break_in_attention():
    query = _scores(2, 4, 5, 8, dtype=torch.float32)
    for projection in ("softmax", "sparsemax", "entmax15", 1.5, AlphaEntmax(1.5, learnable=True)):
        torch._dynamo.reset()
        sdpa = torch._dynamo.explain(
            lambda q: scaled_dot_product_attention(q, q, q, is_causal=True, projection=projection))(query)
        assert sdpa.graph_break_count == 0, (projection, sdpa.break_reasons)
    attention = MultiHeadAttention(8, 2, batch_first=True, projection="entmax15")
    padding = torch.tensor([[False] * 5, [False, False, True, True, True]])
    torch._dynamo.reset()
    mha = torch._dynamo.explain(lambda x: attention(x, x, x, key_padding_mask=padding))(query[:, 0])
    assert mha.graph_break_count == 0, mha.break_reasons


def _masked_scores() -> torch.Tensor:
    """Rows with ties, masked (−inf) entries, a length-1 row and an all-masked row."""
    scores = _scores(5, 6, seed=3, dtype=torch.float32)
    scores[0, :3] = 0.7                       # a three-way tie at the top
    scores[1, 4:] = -torch.inf                # masked padding
    scores[2, 1:] = -torch.inf                # one kept position
    scores[3] = -torch.inf                    # nothing kept
    return scores


@pytest.mark.parametrize(("name", "backend"), [(name, "inductor" if name in ("sparsemax", "entmax15") else "aot_eager")
                                               for name in PROJECTIONS])
def test_fullgraph_compile_equals_eager_forward_and_backward(name, backend):
    projection = PROJECTIONS[name]
    scores, empty_row = _masked_scores(), 3
    if "per row" in name:  # three rows, one α each; the last has nothing kept
        scores, empty_row = scores[[0, 1, 3]], 2
    direction = _scores(*scores.shape, seed=4, dtype=torch.float32)

    def loss_and_gradient(function):
        x = scores.clone().requires_grad_(True)
        weights = function(x)
        (weights * direction).sum().backward()
        return weights.detach(), x.grad

    torch._dynamo.reset()
    compiled = torch.compile(projection, fullgraph=True, backend=backend)
    (eager_weights, eager_grad), (weights, grad) = loss_and_gradient(projection), loss_and_gradient(compiled)
    torch.testing.assert_close(weights, eager_weights, atol=2e-6, rtol=0)
    torch.testing.assert_close(grad, eager_grad, atol=2e-5, rtol=0)
    assert (weights[empty_row] == 0).all() and (grad[empty_row] == 0).all()


@pytest.mark.parametrize("name", [n for n in PROJECTIONS if "per row" not in n])
def test_vmap_equals_a_loop_over_the_batch(name):
    projection = PROJECTIONS[name]
    scores = _scores(4, 3, 6, seed=5)
    looped = torch.stack([projection(row) for row in scores])
    torch.testing.assert_close(vmap(projection)(scores), looped, atol=1e-12, rtol=0)
    torch.testing.assert_close(vmap(projection, in_dims=1, out_dims=1)(scores), scores.new_tensor(
        torch.stack([projection(scores[:, j]) for j in range(3)], 1)), atol=1e-12, rtol=0)


def test_vmap_of_a_learnable_alpha_and_of_gumbel_softmax():
    projection = AlphaEntmax(1.5, learnable=True, alpha_shape=(3, 1)).double()
    scores = _scores(4, 3, 6, seed=6)
    torch.testing.assert_close(vmap(projection)(scores), torch.stack([projection(row) for row in scores]))
    samples = vmap(lambda s: gumbel_softmax(s, 0.5), randomness="different")(scores)
    torch.testing.assert_close(samples.sum(-1), torch.ones(4, 3, dtype=torch.float64))


@pytest.mark.parametrize("name", JACOBIANS)
def test_jacrev_equals_the_closed_form_jacobian(name):
    projection, jacobian = JACOBIANS[name]
    for seed in range(3):
        row = _scores(7, seed=seed)
        row[2] = row[5] = row.max()  # a tie at the top
        expected = jacobian(projection(row))
        torch.testing.assert_close(jacrev(projection)(row), expected, atol=1e-10, rtol=1e-8)


def test_jacrev_in_alpha_matches_finite_differences():
    row = _scores(6, seed=7)
    alpha = torch.tensor(1.6, dtype=torch.float64)
    derivative = jacrev(lambda a: alpha_entmax(row, a.reshape(1)))(alpha)
    step = 1e-6
    numeric = (alpha_entmax(row, 1.6 + step) - alpha_entmax(row, 1.6 - step)) / (2 * step)
    torch.testing.assert_close(derivative, numeric, atol=1e-7, rtol=1e-6)


def test_a_compiled_multi_head_attention_equals_eager_forward_and_backward():
    torch.manual_seed(0)
    attention = MultiHeadAttention(8, 2, batch_first=True, projection="sparsemax")
    x = torch.randn(2, 5, 8, requires_grad=True)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)

    def run(module):
        output, weights = module(x, x, x, key_padding_mask=padding, attn_mask=causal, is_causal=True)
        gradient, = torch.autograd.grad(output.square().sum(), x)
        return output, weights, gradient

    torch._dynamo.reset()
    for compiled, eager in zip(run(torch.compile(attention, fullgraph=True)), run(attention)):
        torch.testing.assert_close(compiled, eager, atol=1e-5, rtol=1e-5)


SORTING = [("sparsemax", SparsemaxBySorting, SparsemaxFunction, 1.0),
           ("entmax15", Entmax15BySorting, Entmax15Function, 2.0)]


@pytest.mark.parametrize(("name", "by_sorting", "eager", "scale"), SORTING, ids=[s[0] for s in SORTING])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_thresholds_by_sorting_equal_the_eager_searches(name, by_sorting, eager, scale, dtype):
    """Ties, masked entries, one kept entry, nothing kept, tiny and huge scales, long rows."""
    rows = [_masked_scores().to(dtype)]
    for seed, (length, spread) in enumerate([(5, 1e-4), (9, 1.0), (33, 50.0), (700, 3.0), (4096, 0.01)]):
        rows.append(_scores(8, length, seed=seed, dtype=dtype) * spread)
    tolerance = 1e-12 if dtype == torch.float64 else 3e-6
    for scores in rows:
        z = scores - scores.amax(1, keepdim=True).nan_to_num(neginf=0.0)
        x = z.clone().requires_grad_(True)
        y = z.clone().requires_grad_(True)
        sorted_weights = by_sorting.apply(x)
        eager_weights = eager.apply(y, torch.zeros(len(z), 1, dtype=dtype))
        torch.testing.assert_close(sorted_weights, eager_weights, atol=tolerance, rtol=0)
        direction = torch.randn_like(z)
        (sorted_weights * direction).sum().backward()
        (eager_weights * direction).sum().backward()
        torch.testing.assert_close(x.grad, y.grad, atol=tolerance * 10, rtol=0)


@pytest.mark.parametrize("name", ["softmax", "sparsemax", "entmax15", "alpha_entmax 1.3"])
def test_where_values_are_not_read_a_bad_score_gives_nan_never_a_number(name):
    """Eagerly on the CPU NaN or +inf scores raise (tests/test_validation.py); under vmap (as under torch.compile
    and on GPUs) checking would cost a sync or a graph break, so the bad row is NaN and the others are exact."""
    projection = PROJECTIONS[name]
    scores = _scores(3, 5, seed=8)
    scores[0, 2], scores[1, 4] = torch.nan, torch.inf
    weights = vmap(projection)(scores)
    assert weights[:2].isnan().any(1).all()
    torch.testing.assert_close(weights[2], projection(scores[2]))
    with pytest.raises(ValueError, match="NaN"):
        projection(scores)
