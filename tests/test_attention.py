"""Tests of sparse_tutorial.attention: every score × projection × mask, local-p, multi-head, hierarchical,
pointer, and the error messages."""
from __future__ import annotations

import math
from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

from sparse_tutorial.attention import (
    AdditiveScore,
    Attention,
    ContextAttention,
    CosineScore,
    CoverageAdditiveScore,
    DotScore,
    GeneralScore,
    HierarchicalAttention,
    LocalPAttention,
    LocationScore,
    LocationSensitiveScore,
    MultiHeadAttention,
    PointerAttention,
    ScaledDotScore,
    get_score,
)

QUERY_DIM, KEY_DIM, HIDDEN_DIM, VALUE_DIM = 5, 6, 7, 3

PROJECTIONS: list[tuple[str, dict]] = [
    ("softmax", {}),
    ("sparsemax", {}),
    ("sparsegen", {"lam": 0.5}),
    ("entmax15", {}),
    ("temperature", {"temperature": 0.5}),
    ("gumbel", {"temperature": 0.5}),
    ("gumbel", {"temperature": 1.0, "hard": True}),
]
PROJECTION_IDS = [name + "".join(f"-{k}={v}" for k, v in kwargs.items()) for name, kwargs in PROJECTIONS]


def _uniform_state(batch: int, src_len: int) -> dict[str, Tensor]:
    return {}


# name -> (score factory, query_dim, key_dim, state factory(batch, src_len))
SCORE_CASES: dict[str, tuple[Callable[[], nn.Module], int, int, Callable[[int, int], dict[str, Tensor]]]] = {
    "dot": (DotScore, KEY_DIM, KEY_DIM, _uniform_state),
    "scaled_dot": (ScaledDotScore, KEY_DIM, KEY_DIM, _uniform_state),
    "cosine": (lambda: CosineScore(scale=3.0), KEY_DIM, KEY_DIM, _uniform_state),
    "general": (lambda: GeneralScore(QUERY_DIM, KEY_DIM), QUERY_DIM, KEY_DIM, _uniform_state),
    "additive": (lambda: AdditiveScore(QUERY_DIM, KEY_DIM, HIDDEN_DIM), QUERY_DIM, KEY_DIM, _uniform_state),
    "location": (lambda: LocationScore(QUERY_DIM, max_src_len=9), QUERY_DIM, KEY_DIM, _uniform_state),
    "location_sensitive": (
        lambda: LocationSensitiveScore(QUERY_DIM, KEY_DIM, HIDDEN_DIM, n_filters=3, kernel_size=5),
        QUERY_DIM, KEY_DIM,
        lambda batch, src_len: {"previous_weights": torch.softmax(torch.randn(batch, src_len), dim=-1)},
    ),
    "coverage_scalar": (
        lambda: CoverageAdditiveScore(QUERY_DIM, KEY_DIM, HIDDEN_DIM),
        QUERY_DIM, KEY_DIM,
        lambda batch, src_len: {"coverage": torch.rand(batch, src_len) * 2},
    ),
    "coverage_vector": (
        lambda: CoverageAdditiveScore(QUERY_DIM, KEY_DIM, HIDDEN_DIM, coverage_dim=4),
        QUERY_DIM, KEY_DIM,
        lambda batch, src_len: {"coverage": torch.randn(batch, src_len, 4)},
    ),
}

MASK_KINDS = ["none", "random", "all_but_one", "length_one"]


def _make_mask(kind: str, batch: int, src_len: int, generator: torch.Generator) -> Tensor | None:
    if kind in ("none", "length_one"):
        return None if kind == "none" else torch.ones(batch, src_len, dtype=torch.bool)
    if kind == "random":
        mask = torch.rand(batch, src_len, generator=generator) < 0.6
        mask[torch.arange(batch), torch.randint(src_len, (batch,), generator=generator)] = True
        return mask
    keep = torch.randint(src_len, (batch,), generator=generator)
    return F.one_hot(keep, src_len).bool()


def _build(score_name: str, projection: str, kwargs: dict, mask_kind: str, batch: int = 4):
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    factory, query_dim, key_dim, state = SCORE_CASES[score_name]
    src_len = 1 if mask_kind == "length_one" else 7
    attention = Attention(factory(), projection, **kwargs)
    query = torch.randn(batch, query_dim, requires_grad=True)
    keys = torch.randn(batch, src_len, key_dim, requires_grad=True)
    values = torch.randn(batch, src_len, VALUE_DIM, requires_grad=True)
    return attention, query, keys, values, _make_mask(mask_kind, batch, src_len, generator), state(batch, src_len)


def _assert_on_simplex_over_kept(weights: Tensor, mask: Tensor | None) -> None:
    keep = torch.ones_like(weights, dtype=torch.bool) if mask is None else mask
    assert torch.isfinite(weights).all()
    assert (weights[~keep] == 0).all(), "masked positions must get exactly zero weight"
    assert (weights >= 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[0]), atol=1e-5, rtol=0)


@pytest.mark.parametrize("mask_kind", MASK_KINDS)
@pytest.mark.parametrize(("projection", "kwargs"), PROJECTIONS, ids=PROJECTION_IDS)
@pytest.mark.parametrize("score_name", list(SCORE_CASES))
def test_weights_sum_to_one_over_kept_and_zero_on_masked(score_name, projection, kwargs, mask_kind):
    attention, query, keys, values, mask, state = _build(score_name, projection, kwargs, mask_kind)
    context, weights = attention(query, keys, values, mask=mask, **state)
    assert weights.shape == keys.shape[:2]
    assert context.shape == (keys.shape[0], VALUE_DIM)
    _assert_on_simplex_over_kept(weights, mask)
    torch.testing.assert_close(context, torch.einsum("bs,bsv->bv", weights, values))


@pytest.mark.parametrize("mask_kind", ["random", "all_but_one"])
@pytest.mark.parametrize(("projection", "kwargs"), PROJECTIONS, ids=PROJECTION_IDS)
@pytest.mark.parametrize("score_name", list(SCORE_CASES))
def test_gradients_flow_and_are_finite(score_name, projection, kwargs, mask_kind):
    attention, query, keys, values, mask, state = _build(score_name, projection, kwargs, mask_kind)
    context, weights = attention(query, keys, values, mask=mask, **state)
    (context.square().sum() + (weights * torch.randn_like(weights)).sum()).backward()
    assert values.grad is not None and torch.isfinite(values.grad).all()
    for name, tensor in (("query", query), ("keys", keys)):
        assert tensor.grad is None or torch.isfinite(tensor.grad).all(), name
    for name, parameter in attention.named_parameters():
        assert parameter.grad is not None, f"{name} got no gradient"
        assert torch.isfinite(parameter.grad).all(), name
    if mask_kind == "random" and projection == "softmax" and score_name != "location":
        assert query.grad is not None and query.grad.abs().sum() > 0, "softmax attention must reach the query"


@pytest.mark.parametrize(("projection", "kwargs"), PROJECTIONS, ids=PROJECTION_IDS)
@pytest.mark.parametrize("score_name", ["dot", "additive", "coverage_scalar"])
def test_fully_masked_row_gives_zero_weights_and_context_without_nan(score_name, projection, kwargs):
    attention, query, keys, values, _, state = _build(score_name, projection, kwargs, "none")
    mask = torch.ones(keys.shape[:2], dtype=torch.bool)
    mask[1] = False
    context, weights = attention(query, keys, values, mask=mask, **state)
    assert (weights[1] == 0).all() and (context[1] == 0).all()
    _assert_on_simplex_over_kept(weights[[0, 2, 3]], mask[[0, 2, 3]])
    (context.sum() + weights.sum()).backward()
    assert torch.isfinite(query.grad).all() and (query.grad[1] == 0).all()


@pytest.mark.parametrize("projection", ["softmax", "sparsemax", "entmax15"])
def test_attention_gradcheck_in_float64(projection):
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(2, 3, dtype=torch.float64, generator=generator, requires_grad=True)
    keys = torch.randn(2, 5, 3, dtype=torch.float64, generator=generator, requires_grad=True)
    values = torch.randn(2, 5, 2, dtype=torch.float64, generator=generator, requires_grad=True)
    mask = torch.tensor([[True, True, True, False, True], [True, False, True, True, False]])
    attention = Attention("dot", projection)
    assert torch.autograd.gradcheck(lambda q, k, v: attention(q, k, v, mask=mask), (query, keys, values))


def test_attention_keeps_low_precision_dtypes():
    query, keys = torch.randn(2, 4).bfloat16(), torch.randn(2, 6, 4).bfloat16()
    mask = torch.tensor([[True] * 6, [True, True, False, False, False, False]])
    for projection in ("softmax", "sparsemax", "entmax15"):
        context, weights = Attention("scaled_dot", projection)(query, keys, mask=mask)
        assert context.dtype == weights.dtype == torch.bfloat16
        assert (weights[~mask] == 0).all()
        torch.testing.assert_close(weights.float().sum(-1), torch.ones(2), atol=1e-2, rtol=0)


def test_gumbel_attention_is_reproducible_with_a_generator():
    query, keys = torch.randn(2, 4), torch.randn(2, 6, 4)
    first = Attention("dot", "gumbel", generator=torch.Generator().manual_seed(3))(query, keys)
    second = Attention("dot", "gumbel", generator=torch.Generator().manual_seed(3))(query, keys)
    other = Attention("dot", "gumbel", generator=torch.Generator().manual_seed(4))(query, keys)
    torch.testing.assert_close(first, second)
    assert not torch.allclose(first[1], other[1])


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 4),
    src_len=st.integers(1, 9),
    seed=st.integers(0, 2**16),
    projection=st.sampled_from(["softmax", "sparsemax", "entmax15", "sparsegen"]),
    scale=st.floats(0.01, 100.0),
)
def test_context_is_a_convex_combination_of_kept_values(batch, src_len, seed, projection, scale):
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(batch, 4, generator=generator) * scale
    keys = torch.randn(batch, src_len, 4, generator=generator)
    values = torch.randn(batch, src_len, 2, generator=generator)
    mask = torch.rand(batch, src_len, generator=generator) < 0.5
    mask[:, 0] = True
    context, weights = Attention("dot", projection)(query, keys, values, mask=mask)
    _assert_on_simplex_over_kept(weights, mask)
    masked_values = values.masked_fill(~mask.unsqueeze(-1), float("nan"))
    assert (context <= masked_values.nan_to_num(float("-inf")).amax(1) + 1e-5).all()
    assert (context >= masked_values.nan_to_num(float("inf")).amin(1) - 1e-5).all()


def test_scores_match_their_formulas():
    torch.manual_seed(0)
    query, keys = torch.randn(2, 6), torch.randn(2, 4, 6)
    dot = torch.einsum("bd,bsd->bs", query, keys)
    torch.testing.assert_close(DotScore()(query, keys), dot)
    torch.testing.assert_close(ScaledDotScore()(query, keys), dot / math.sqrt(6))
    cosine = dot / (query.norm(dim=-1, keepdim=True) * keys.norm(dim=-1))
    torch.testing.assert_close(CosineScore(scale=2.0)(query, keys), 2 * cosine)
    general = GeneralScore(6, 6)
    torch.testing.assert_close(general(query, keys),
                               torch.einsum("bq,qk,bsk->bs", query, general.query_to_key.weight.T, keys))


def test_additive_score_equals_concat_form():
    torch.manual_seed(0)
    score = AdditiveScore(QUERY_DIM, KEY_DIM, HIDDEN_DIM)
    query, keys = torch.randn(3, QUERY_DIM), torch.randn(3, 4, KEY_DIM)
    w_a = torch.cat([score.query_proj.weight, score.key_proj.weight], dim=1)
    concat = torch.cat([query[:, None].expand(-1, 4, -1), keys], dim=-1)
    expected = torch.tanh(concat @ w_a.T) @ score.v.weight.squeeze(0)
    torch.testing.assert_close(score(query, keys), expected)


@pytest.mark.parametrize("score_name", ["additive", "location_sensitive", "coverage_vector"])
def test_precomputed_key_projection_gives_the_same_attention(score_name):
    attention, query, keys, values, mask, state = _build(score_name, "softmax", {}, "random")
    projected_keys = attention.score.project_keys(keys)
    expected = attention(query, keys, values, mask=mask, **state)
    cached = attention(query, keys, values, mask=mask, projected_keys=projected_keys, **state)
    torch.testing.assert_close(cached, expected)
    with pytest.raises(ValueError, match=r"projected_keys must have shape \(batch, src_len, hidden_dim\)"):
        attention(query, keys, values, mask=mask, projected_keys=projected_keys[:, :, :2], **state)


def test_location_score_uses_the_query_only_and_truncates():
    score = LocationScore(QUERY_DIM, max_src_len=6)
    query = torch.randn(2, QUERY_DIM)
    scores = score(query, torch.randn(2, 4, KEY_DIM))
    torch.testing.assert_close(scores, score.position_scores(query)[:, :4])
    torch.testing.assert_close(score(query, torch.zeros(2, 4, KEY_DIM)), scores)


def test_location_sensitive_score_reacts_to_the_previous_alignment():
    torch.manual_seed(0)
    score = LocationSensitiveScore(QUERY_DIM, KEY_DIM, HIDDEN_DIM, n_filters=2, kernel_size=3)
    query, keys = torch.randn(1, QUERY_DIM), torch.randn(1, 5, KEY_DIM)
    first = score(query, keys, previous_weights=F.one_hot(torch.tensor([0]), 5).float())
    last = score(query, keys, previous_weights=F.one_hot(torch.tensor([4]), 5).float())
    # The convolution has width 3, so moving the previous peak from position 0 to 4 changes exactly the
    # scores of positions 0, 1 (old neighbourhood) and 3, 4 (new one), and leaves position 2 alone.
    changed = (first - last).abs() > 1e-7
    assert changed[0, [0, 1, 3, 4]].all() and not changed[0, 2]


def test_coverage_score_without_coverage_equals_additive_score():
    torch.manual_seed(0)
    score = CoverageAdditiveScore(QUERY_DIM, KEY_DIM, HIDDEN_DIM)
    additive = AdditiveScore(QUERY_DIM, KEY_DIM, HIDDEN_DIM)
    additive.load_state_dict(score.state_dict(), strict=False)
    query, keys = torch.randn(2, QUERY_DIM), torch.randn(2, 4, KEY_DIM)
    torch.testing.assert_close(score(query, keys, coverage=torch.zeros(2, 4)), additive(query, keys))
    assert not torch.allclose(score(query, keys, coverage=torch.ones(2, 4)), additive(query, keys))


def test_get_score_and_names():
    assert isinstance(get_score("concat", query_dim=2, key_dim=3, hidden_dim=4), AdditiveScore)
    assert isinstance(Attention("scaled_dot").score, ScaledDotScore)
    with pytest.raises(TypeError, match="'general' .*needs its dimensions"):
        Attention("general")
    with pytest.raises(ValueError, match="score must be one of"):
        get_score("bilinear")
    with pytest.raises(TypeError, match="only used with a projection name"):
        Attention("dot", torch.softmax, temperature=2.0)


def test_attention_accepts_a_callable_projection():
    query, keys = torch.randn(2, 4), torch.randn(2, 3, 4)
    _, weights = Attention("dot", lambda scores, dim: torch.softmax(scores, dim=dim))(query, keys)
    torch.testing.assert_close(weights, torch.softmax(DotScore()(query, keys), -1))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda a, q, k, v, m: a(q, k, v, mask=m[:, :4]),
         r"mask must have shape \(batch, src_len\) = \(2, 5\), got \(2, 4\)"),
        (lambda a, q, k, v, m: a(q, k[:1]),
         r"keys must have shape \(batch, src_len, key_dim\) = \(2, \?, \?\), got \(1, 5, 6\)"),
        (lambda a, q, k, v, m: a(q, k, v[:, :3]),
         r"values must have shape \(batch, src_len, value_dim\) = \(2, 5, \?\), got \(2, 3, 3\)"),
        (lambda a, q, k, v, m: a(q[0], k), r"query must have shape \(batch, query_dim\)"),
        (lambda a, q, k, v, m: a(q[:, :2], k), r"query must have shape \(batch, query_dim\) = \(\?, 5\)"),
    ],
    ids=["mask-shape", "keys-batch", "values-src_len", "query-rank", "query-dim"],
)
def test_shape_errors_name_the_argument(call, message):
    attention = Attention(AdditiveScore(QUERY_DIM, KEY_DIM, HIDDEN_DIM))
    query, keys, values = torch.randn(2, QUERY_DIM), torch.randn(2, 5, KEY_DIM), torch.randn(2, 5, 3)
    with pytest.raises(ValueError, match=message):
        call(attention, query, keys, values, torch.ones(2, 5, dtype=torch.bool))


def test_a_mask_must_be_boolean():
    with pytest.raises(TypeError, match="mask must be a boolean tensor"):
        Attention("dot")(torch.randn(2, 4), torch.randn(2, 5, 4), mask=torch.ones(2, 5))


def test_score_specific_errors():
    query, keys = torch.randn(2, 4), torch.randn(2, 5, 6)
    with pytest.raises(ValueError, match="dot score needs query_dim == key_dim"):
        DotScore()(query, keys)
    with pytest.raises(ValueError, match="src_len=5 > max_src_len=3"):
        LocationScore(4, max_src_len=3)(query, keys)
    with pytest.raises(ValueError, match=r"previous_weights must have shape \(batch, src_len\) = \(2, 5\)"):
        LocationSensitiveScore(4, 6, 3, kernel_size=3)(query, keys, previous_weights=torch.zeros(2, 4))
    with pytest.raises(ValueError, match=r"coverage must have shape \(batch, src_len, coverage_dim\)"):
        CoverageAdditiveScore(4, 6, 3, coverage_dim=2)(query, keys, coverage=torch.zeros(2, 5))
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        LocationSensitiveScore(4, 6, 3, kernel_size=4)


# ------------------------------------------------------------------------------------------------ local-p


def test_local_p_matches_a_hand_computed_window():
    # Zero position weights: p_t = S · sigmoid(0) = S / 2 = 4.5 for S = 9 kept positions; D = 2 so the window
    # is s ∈ [2.5, 6.5] = {3, 4, 5, 6} and σ = 1. Zero keys make every dot score 0: align = 1/4 in the window.
    attention = LocalPAttention("dot", query_dim=3, hidden_dim=2, half_window=2)
    nn.init.zeros_(attention.position_out.weight)
    mask = torch.ones(1, 11, dtype=torch.bool)
    mask[0, 9:] = False
    values = torch.randn(1, 11, 2)
    context, weights = attention(torch.randn(1, 3), torch.zeros(1, 11, 3), values, mask=mask)
    expected = torch.zeros(1, 11)
    for s in (3, 4, 5, 6):
        expected[0, s] = 0.25 * math.exp(-((s - 4.5) ** 2) / 2)
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(context, expected @ values[0])
    assert weights.sum() < 1, "after the Gaussian, Luong's local-p weights sum to less than 1"


@pytest.mark.parametrize("renormalize", [False, True])
@pytest.mark.parametrize(("projection", "kwargs"), PROJECTIONS, ids=PROJECTION_IDS)
def test_local_p_weights_are_windowed_masked_and_finite(projection, kwargs, renormalize):
    torch.manual_seed(0)
    attention = LocalPAttention(AdditiveScore(QUERY_DIM, KEY_DIM, HIDDEN_DIM), QUERY_DIM, 4, half_window=2,
                                projection=projection, renormalize=renormalize, **kwargs)
    query, keys = torch.randn(3, QUERY_DIM, requires_grad=True), torch.randn(3, 10, KEY_DIM)
    mask = torch.arange(10) < torch.tensor([[10], [6], [0]])
    context, weights = attention(query, keys, mask=mask)
    positions = attention.predict_position(query, mask.sum(-1))
    in_window = (torch.arange(10) - positions[:, None]).abs() <= 2
    assert torch.isfinite(weights).all() and torch.isfinite(context).all()
    assert (weights[~(mask & in_window)] == 0).all()
    assert (weights[2] == 0).all(), "a row with no source token gets no weight"
    sums = weights[:2].sum(-1)
    if renormalize:
        torch.testing.assert_close(sums, torch.ones(2))
    else:
        assert ((sums > 0) & (sums <= 1 + 1e-6)).all()
    context.sum().backward()
    assert torch.isfinite(query.grad).all()
    if projection == "softmax":
        assert attention.position_hidden.weight.grad.abs().sum() > 0, "p_t must learn through the Gaussian"


# -------------------------------------------------------------------------------------------- multi-head


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("masks", ["none", "padding", "causal"])
def test_multi_head_equals_torch_multihead_attention(bias, masks):
    torch.manual_seed(0)
    embed_dim, heads, batch, tgt_len, src_len = 12, 3, 2, 4, 4 if masks == "causal" else 6
    reference = nn.MultiheadAttention(embed_dim, heads, bias=bias, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(reference).eval()
    query = torch.randn(batch, tgt_len, embed_dim)
    key, value = torch.randn(batch, src_len, embed_dim), torch.randn(batch, src_len, embed_dim)
    keep = torch.ones(batch, src_len, dtype=torch.bool)
    attn_keep = None
    if masks == "padding":
        keep[1, 3:] = False
    if masks == "causal":
        attn_keep = torch.ones(tgt_len, src_len, dtype=torch.bool).tril()
    expected, expected_weights = reference(
        query, key, value, key_padding_mask=~keep, need_weights=True, average_attn_weights=False,
        attn_mask=None if attn_keep is None else ~attn_keep,
    )
    output, weights = ours(query, key, value, key_padding_mask=~keep, average_attn_weights=False,
                           attn_mask=None if attn_keep is None else ~attn_keep)
    assert weights.shape == (batch, heads, tgt_len, src_len)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("projection", "kwargs"), PROJECTIONS, ids=PROJECTION_IDS)
def test_multi_head_with_any_projection(projection, kwargs):
    torch.manual_seed(0)
    attention = MultiHeadAttention(8, 2, projection=projection, dropout=0.1, batch_first=True, **kwargs)
    query = torch.randn(3, 4, 8, requires_grad=True)
    keep = torch.arange(5) < torch.tensor([[5], [2], [0]])
    output, weights = attention(query, torch.randn(3, 5, 8), key_padding_mask=~keep, average_attn_weights=False)
    assert torch.isfinite(output).all()
    assert (weights[~keep[:, None, None, :].expand_as(weights)] == 0).all()
    torch.testing.assert_close(weights[:2].sum(-1), torch.ones(2, 2, 4), atol=1e-5, rtol=0)
    assert (weights[2] == 0).all(), "a sequence with no key attends to nothing"
    output.sum().backward()
    assert torch.isfinite(query.grad).all()


def test_multi_head_errors():
    with pytest.raises(ValueError, match="divisible by num_heads"):
        MultiHeadAttention(10, 3)
    attention = MultiHeadAttention(8, 2, batch_first=True)
    with pytest.raises(ValueError, match=r"key must be \(batch, len, dim\) .* dim = 8; query has shape "
                                         r"\(2, 3, 8\), key \(2, 5, 6\)"):
        attention(torch.randn(2, 3, 8), torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match=r"key must have shape \(batch, src_len, kdim\) = \(2, \?, 8\), got \(3, 5, 8\)"):
        attention(torch.randn(2, 3, 8), torch.randn(3, 5, 8))
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(batch, src_len\) = \(2, 5\)"):
        attention(torch.randn(2, 3, 8), torch.randn(2, 5, 8), key_padding_mask=torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="key_padding_mask must be boolean .* got dtype torch.int64"):
        attention(torch.randn(2, 3, 8), torch.randn(2, 5, 8), key_padding_mask=torch.ones(2, 5, dtype=torch.long))


# ------------------------------------------------------------------------------------------- hierarchical


def _padded_documents() -> tuple[Tensor, Tensor]:
    torch.manual_seed(0)
    words = torch.randn(2, 3, 4, 5)
    mask = torch.zeros(2, 3, 4, dtype=torch.bool)
    mask[0, 0, :4] = True
    mask[0, 1, :2] = True  # document 0: sentence 2 is all padding
    mask[1, 0, :1] = True  # document 1: one sentence of one word
    return words, mask


@pytest.mark.parametrize(("projection", "kwargs"), PROJECTIONS, ids=PROJECTION_IDS)
def test_hierarchical_attention_with_padded_sentences(projection, kwargs):
    words, mask = _padded_documents()
    words.requires_grad_(True)
    attention = HierarchicalAttention(5, 6, projection=projection, **kwargs)
    document, word_weights, sentence_weights = attention(words, mask)
    assert document.shape == (2, 5) and word_weights.shape == (2, 3, 4) and sentence_weights.shape == (2, 3)
    assert torch.isfinite(document).all()
    assert (word_weights[~mask] == 0).all()
    sentence_mask = mask.any(-1)
    assert (sentence_weights[~sentence_mask] == 0).all()
    torch.testing.assert_close(word_weights.sum(-1), sentence_mask.float(), atol=1e-5, rtol=0)
    torch.testing.assert_close(sentence_weights.sum(-1), torch.ones(2), atol=1e-5, rtol=0)
    sentences = torch.einsum("bsw,bswd->bsd", word_weights, words)
    torch.testing.assert_close(document, torch.einsum("bs,bsd->bd", sentence_weights, sentences))
    document.sum().backward()
    assert torch.isfinite(words.grad).all() and (words.grad[~mask] == 0).all()
    for name, parameter in attention.named_parameters():
        assert torch.isfinite(parameter.grad).all(), name


def test_hierarchical_attention_ignores_what_is_padded():
    words, mask = _padded_documents()
    attention = HierarchicalAttention(5, 6)
    garbage = words.masked_fill(~mask.unsqueeze(-1), 1e4)
    torch.testing.assert_close(attention(garbage, mask).document, attention(words, mask).document)
    more_sentences = torch.cat([words, torch.randn(2, 2, 4, 5)], dim=1)
    more_mask = torch.cat([mask, torch.zeros(2, 2, 4, dtype=torch.bool)], dim=1)
    torch.testing.assert_close(attention(more_sentences, more_mask).document, attention(words, mask).document)


def test_context_attention_matches_yang_et_al():
    torch.manual_seed(0)
    attention = ContextAttention(5, 3)
    inputs = torch.randn(2, 4, 5)
    summary, weights = attention(inputs)
    u = torch.tanh(inputs @ attention.hidden.weight.T + attention.hidden.bias)
    expected = torch.softmax(u @ attention.context_vector, dim=-1)
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(summary, torch.einsum("bs,bsd->bd", expected, inputs))
    with pytest.raises(ValueError, match=r"mask must have shape \(2, 4\), got \(2, 3\)"):
        attention(inputs, torch.ones(2, 3, dtype=torch.bool))


# ----------------------------------------------------------------------------------------------- pointer


@pytest.mark.parametrize(("projection", "kwargs"), PROJECTIONS, ids=PROJECTION_IDS)
def test_pointer_attention_is_a_distribution_over_input_positions(projection, kwargs):
    torch.manual_seed(0)
    pointer = PointerAttention(QUERY_DIM, KEY_DIM, HIDDEN_DIM, projection=projection, **kwargs)
    query, keys = torch.randn(3, QUERY_DIM, requires_grad=True), torch.randn(3, 6, KEY_DIM)
    mask = torch.arange(6) < torch.tensor([[6], [3], [1]])
    probabilities, scores = pointer(query, keys, mask=mask)
    _assert_on_simplex_over_kept(probabilities, mask)
    assert torch.isneginf(scores[~mask]).all() and torch.isfinite(scores[mask]).all()
    if projection == "softmax":
        torch.testing.assert_close(probabilities.log(), torch.log_softmax(scores, -1))
        loss = F.cross_entropy(scores, torch.tensor([5, 2, 0]))
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(query.grad).all()
