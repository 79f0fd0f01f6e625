"""Issue 31: the library as a drop-in for code written against torch and the entmax package.

Every projection is usable as a name, a function ``f(x, dim=...)`` and a module ``M(dim=...)`` with the same
result, and each plugs into every attention; entmax's names mean what they mean there (checked against the
package on the same inputs); torch's argument names mean what they mean in torch (``MultiHeadAttention``
beside ``nn.MultiheadAttention``, ``scaled_dot_product_attention`` beside torch's); a learnable α per head
gets its gradient.
"""
import entmax
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from sparse_tutorial import (
    AlphaEntmax, Attention, ContextAttention, Entmax15, Entmax15Loss, EntmaxBisect, EntmaxBisectLoss,
    MultiHeadAttention, PointerAttention, Softmax, Sparsemax, SparsemaxLoss, entmax15, entmax15_loss,
    entmax_bisect, entmax_bisect_loss, scaled_dot_product_attention, softmax, sparsemax, sparsemax_loss,
)
from sparse_tutorial.projections import get_projection
from sparse_tutorial.scores import AdditiveScore

SCORES = torch.randn(4, 3, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


@pytest.fixture(autouse=True)
def float64():
    """Every comparison in float64, so that a difference is an error, not rounding."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)

THREE_WAYS = [("softmax", softmax, Softmax), ("sparsemax", sparsemax, Sparsemax), ("entmax15", entmax15, Entmax15)]


@pytest.mark.parametrize(("name", "function", "module"), THREE_WAYS, ids=[w[0] for w in THREE_WAYS])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_a_projection_is_the_same_by_name_function_and_module(name, function, module, dim):
    by_function = function(SCORES, dim=dim)
    assert torch.equal(get_projection(name)(SCORES, dim=dim), by_function)
    assert torch.equal(module(dim=dim)(SCORES), by_function)


@pytest.mark.parametrize("alpha", [1.25, 1.5, 2.0, 3.0])
def test_alpha_entmax_three_ways_and_entmax_bisect_as_in_the_entmax_package(alpha):
    expected = entmax.entmax_bisect(SCORES, alpha, dim=1)
    torch.testing.assert_close(entmax_bisect(SCORES, alpha, dim=1), expected, atol=1e-12, rtol=0)
    torch.testing.assert_close(EntmaxBisect(alpha, dim=1)(SCORES), expected, atol=1e-12, rtol=0)
    torch.testing.assert_close(get_projection("alpha_entmax", alpha=alpha)(SCORES, dim=1), expected, atol=1e-12, rtol=0)
    torch.testing.assert_close(AlphaEntmax(alpha, dim=1)(SCORES), expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize(("ours", "theirs"), [(sparsemax, entmax.sparsemax), (entmax15, entmax.entmax15)])
def test_sparsemax_and_entmax15_equal_the_entmax_package(ours, theirs):
    torch.testing.assert_close(ours(SCORES, dim=-1), theirs(SCORES, dim=-1), atol=1e-12, rtol=0)


PLUGS = [("a name", "sparsemax"), ("a function", sparsemax), ("our module", Sparsemax()),
         ("the entmax package's module", entmax.Sparsemax(dim=-1))]


@pytest.mark.parametrize("projection", [p for _, p in PLUGS], ids=[n for n, _ in PLUGS])
def test_any_form_of_a_projection_plugs_into_every_attention(projection):
    torch.manual_seed(0)
    query, keys, score = torch.randn(2, 6), torch.randn(2, 5, 6), AdditiveScore(6, 6, 4)
    expected = sparsemax(score(query, keys), dim=-1)
    _, weights = Attention(score, projection=projection)(query, keys)
    torch.testing.assert_close(weights, expected)
    assert ContextAttention(6, 4, projection=projection)(keys)[1].shape == (2, 5)
    assert PointerAttention(6, 6, 4, projection=projection)(query, keys)[0].shape == (2, 5)
    _, heads = MultiHeadAttention(6, 2, projection=projection, batch_first=True)(
        keys, keys, average_attn_weights=False)
    assert heads.shape == (2, 2, 5, 5) and (heads == 0).any()
    _, sdpa = scaled_dot_product_attention(keys, keys, keys, projection=projection, return_weights=True)
    torch.testing.assert_close(sdpa, sparsemax(keys @ keys.transpose(1, 2) / 6 ** 0.5, dim=-1))


def test_a_projection_module_over_another_dimension_is_refused_in_attention():
    with pytest.raises(ValueError, match=r"last dimension \(dim=-1\), got Sparsemax with dim=1"):
        Attention("dot", projection=Sparsemax(dim=1))


def test_a_learnable_alpha_per_head_trains_inside_multi_head_attention():
    torch.manual_seed(0)
    projection = AlphaEntmax(1.5, learnable=True, alpha_shape=(3, 1, 1))
    attention = MultiHeadAttention(6, 3, projection=projection, batch_first=True)
    assert any(parameter is projection.alpha_raw for parameter in attention.parameters())
    inputs = torch.randn(2, 4, 6)
    target = torch.randn(2, 4, 6)

    def loss_at(alpha_raw: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            projection.alpha_raw.copy_(alpha_raw)
        return ((attention(inputs, inputs)[0] - target) ** 2).sum()

    start = projection.alpha_raw.detach().clone()
    loss_at(start).backward()
    gradient = projection.alpha_raw.grad.clone()
    assert gradient.shape == (3, 1, 1) and (gradient != 0).all()
    step = 1e-6
    for head in range(3):
        bump = torch.zeros(3, 1, 1)
        bump[head] = step
        numeric = (loss_at(start + bump) - loss_at(start - bump)).item() / (2 * step)
        assert numeric == pytest.approx(gradient[head].item(), rel=1e-5, abs=1e-9)


CLASSES = torch.tensor([0, 4, 2, 2, 1, 3])
LOGITS = torch.randn(6, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
LOSSES = [("sparsemax", sparsemax_loss, entmax.sparsemax_loss),
          ("entmax15", entmax15_loss, entmax.entmax15_loss),
          ("bisect-1.25", lambda x, y: entmax_bisect_loss(x, y, 1.25), lambda x, y: entmax.entmax_bisect_loss(x, y, 1.25)),
          ("bisect-3", lambda x, y: entmax_bisect_loss(x, y, 3.0), lambda x, y: entmax.entmax_bisect_loss(x, y, 3.0))]


@pytest.mark.parametrize(("name", "ours", "theirs"), LOSSES, ids=[loss[0] for loss in LOSSES])
def test_losses_and_their_gradients_equal_the_entmax_package(name, ours, theirs):
    x = LOGITS.clone().requires_grad_(True)
    mine, reference = ours(x, CLASSES), theirs(x, CLASSES)
    torch.testing.assert_close(mine, reference, atol=1e-12, rtol=0)
    torch.testing.assert_close(torch.autograd.grad(mine.sum(), x)[0], torch.autograd.grad(reference.sum(), x)[0],
                               atol=1e-12, rtol=0)


MODULES = [(SparsemaxLoss, entmax.SparsemaxLoss, {}), (Entmax15Loss, entmax.Entmax15Loss, {}),
           (EntmaxBisectLoss, entmax.EntmaxBisectLoss, {"alpha": 1.75})]


@pytest.mark.parametrize(("ours", "theirs", "kwargs"), MODULES, ids=[m[0].__name__ for m in MODULES])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_loss_modules_reduce_and_ignore_as_the_entmax_package(ours, theirs, kwargs, reduction):
    entmax_reduction = "elementwise_mean" if reduction == "mean" else reduction
    expected = theirs(**kwargs, ignore_index=2, reduction=entmax_reduction)(LOGITS, CLASSES)
    torch.testing.assert_close(ours(**kwargs, ignore_index=2, reduction=reduction)(LOGITS, CLASSES), expected,
                               atol=1e-12, rtol=0)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_the_alpha_one_loss_module_is_torch_cross_entropy_with_its_reduction_and_ignore_index(reduction):
    targets = CLASSES.clone()
    targets[1] = -100
    expected = nn.CrossEntropyLoss(reduction=reduction)(LOGITS, targets)
    torch.testing.assert_close(EntmaxBisectLoss(alpha=1.0, reduction=reduction)(LOGITS, targets), expected)


def test_a_bad_reduction_is_named():
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'average'"):
        SparsemaxLoss(reduction="average")


# ------------------------------------------------------------- torch's names mean what they mean in torch
def masks(batch: int, tgt_len: int, src_len: int, heads: int) -> dict[str, dict]:
    generator = torch.Generator().manual_seed(3)
    padding = torch.zeros(batch, src_len, dtype=torch.bool)
    padding[0, -2:] = True
    causal = torch.triu(torch.ones(tgt_len, src_len, dtype=torch.bool), diagonal=1)
    float_causal = torch.zeros(tgt_len, src_len).masked_fill(causal, float("-inf"))
    return {
        "none": {},
        "padding": {"key_padding_mask": padding},
        "float padding": {"key_padding_mask": padding.double() * -1e9},
        "causal": {"attn_mask": causal},
        "causal hint": {"attn_mask": float_causal, "is_causal": True},
        "causal and padding, per head": {"attn_mask": causal, "key_padding_mask": padding,
                                         "average_attn_weights": False},
        "per batch and head": {"attn_mask": torch.randn(batch * heads, tgt_len, src_len, generator=generator)},
        "no weights": {"key_padding_mask": padding, "need_weights": False},
    }


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("case", list(masks(3, 5, 5, 2)))
def test_multi_head_attention_beside_torch_on_the_same_inputs_and_masks(batch_first, case):
    torch.manual_seed(0)
    reference = nn.MultiheadAttention(8, 2, batch_first=batch_first).eval()
    ours = MultiHeadAttention.from_torch(reference).eval()
    query, key, value = (torch.randn(3, 5, 8) for _ in range(3))
    if not batch_first:
        query, key, value = (x.transpose(0, 1) for x in (query, key, value))
    kwargs = masks(3, 5, 5, 2)[case]
    expected, expected_weights = reference(query, key, value, **kwargs)
    output, weights = ours(query, key, value, **kwargs)
    torch.testing.assert_close(output, expected, atol=1e-12, rtol=1e-12)
    if expected_weights is None:
        assert weights is None
    else:
        torch.testing.assert_close(weights, expected_weights, atol=1e-12, rtol=1e-12)


def test_the_causal_hint_needs_its_mask_as_in_torch():
    attention = MultiHeadAttention(4, 2)
    with pytest.raises(ValueError, match="is_causal is a hint"):
        attention(torch.randn(3, 1, 4), torch.randn(3, 1, 4), is_causal=True)


SDPA_CASES = {
    "none": {},
    "causal": {"is_causal": True},
    "boolean mask (True = take part)": {"attn_mask": torch.rand(5, 7, generator=torch.Generator().manual_seed(4)) > 0.3},
    "float mask": {"attn_mask": torch.randn(5, 7, generator=torch.Generator().manual_seed(5), dtype=torch.float64)},
    "scale": {"scale": 0.3},
}


@pytest.mark.parametrize("case", list(SDPA_CASES))
def test_scaled_dot_product_attention_equals_torch_with_softmax(case):
    generator = torch.Generator().manual_seed(6)
    query, key, value = torch.randn(2, 3, 5, 8, generator=generator), torch.randn(2, 3, 7, 8, generator=generator), \
        torch.randn(2, 3, 7, 4, generator=generator)
    kwargs = SDPA_CASES[case]
    if "attn_mask" in kwargs and kwargs["attn_mask"].dtype == torch.bool:
        kwargs["attn_mask"][:, 0] = True   # every query keeps a key: torch would give NaN otherwise
    torch.testing.assert_close(scaled_dot_product_attention(query, key, value, **kwargs),
                               F.scaled_dot_product_attention(query, key, value, **kwargs), atol=1e-12, rtol=1e-12)


def test_scaled_dot_product_attention_with_sparse_projections():
    generator = torch.Generator().manual_seed(7)
    query, key, value = (torch.randn(2, 4, 6, generator=generator) for _ in range(3))
    for projection, zeros in (("softmax", False), ("sparsemax", True), ("entmax15", True), (1.5, True)):
        output, weights = scaled_dot_product_attention(query, key, value, projection=projection, is_causal=True,
                                                       return_weights=True)
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4))
        assert torch.equal(weights.triu(1), torch.zeros_like(weights))           # causal
        allowed = torch.ones(4, 4, dtype=torch.bool).tril()
        assert bool((weights[:, allowed] == 0).any()) == zeros
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        scaled_dot_product_attention(query, key, value, attn_mask=torch.ones(4, 4, dtype=torch.bool), is_causal=True)
