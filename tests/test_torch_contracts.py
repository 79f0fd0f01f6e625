"""Borrowed names keep their contracts: what torch's and the entmax package's names mean there, they mean here.

* ``attn_mask`` and ``key_padding_mask`` are boolean or floating point; an integer mask is refused, as torch
  refuses it (added to the scores it would put the weight on the masked keys);
* the loss modules take ``entmax``'s arguments in its order (``Entmax15Loss(512)`` is ``k=512`` there) and
  ``forward(X, target)``; the functions take ``k``;
* ``scaled_dot_product_attention`` takes ``enable_gqa``;
* ``MultiHeadAttention`` is ``torch.nn.MultiheadAttention``: its constructor, parameters, initialisation,
  ``state_dict``, unbatched input, and its place inside torch's Transformer layers, in training and in
  inference, where torch's fused softmax kernels must never replace another projection.
"""
from __future__ import annotations

import itertools

import entmax
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from sparse_tutorial import (
    Entmax15, Entmax15Loss, EntmaxBisectLoss, MultiHeadAttention, Sparsemax, SparsemaxLoss, entmax15, entmax15_loss,
    scaled_dot_product_attention, sparsemax, sparsemax_loss,
)


@pytest.fixture(autouse=True)
def float64():
    """Comparisons in float64, so that a difference is an error, not rounding."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------------------------- masks


def test_an_integer_attn_mask_is_refused_as_torch_refuses_it():
    q = _randn(1, 3, 4)
    keep = torch.tensor([1, 1, 1, 0, 0])
    k = _randn(1, 5, 4)
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, k, k, attn_mask=keep)
    with pytest.raises(TypeError, match=r"attn_mask must be boolean \(True = may attend\) or floating point .* "
                                        r"got dtype torch.int64"):
        scaled_dot_product_attention(q, k, k, attn_mask=keep, projection="sparsemax")
    attention = MultiHeadAttention(4, 2, batch_first=True)
    with pytest.raises(TypeError, match=r"attn_mask must be boolean \(True = may not attend\)"):
        attention(q, k, k, attn_mask=torch.zeros(3, 5, dtype=torch.int32))


def test_the_same_mask_as_bool_keeps_the_weight_off_the_masked_keys():
    q, k = _randn(1, 3, 4), _randn(1, 5, 4, seed=1)
    keep = torch.tensor([True, True, True, False, False])
    _, weights = scaled_dot_product_attention(q, k, k, attn_mask=keep, projection="sparsemax", return_weights=True)
    assert (weights[..., 3:] == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, 3))
    additive = torch.zeros(5).masked_fill(~keep, -torch.inf)
    torch.testing.assert_close(scaled_dot_product_attention(q, k, k, attn_mask=additive, projection="sparsemax"),
                               scaled_dot_product_attention(q, k, k, attn_mask=keep, projection="sparsemax"))


# ------------------------------------------------------------------------------------------------ losses


LOGITS = _randn(6, 600, seed=2).double()
CLASSES = torch.tensor([512, 4, 512, 2, 1, 3])


@pytest.mark.parametrize(("ours", "theirs", "args"), [
    (Entmax15Loss, entmax.Entmax15Loss, (512,)),
    (Entmax15Loss, entmax.Entmax15Loss, (None, 512, "sum")),
    (SparsemaxLoss, entmax.SparsemaxLoss, (10, 4, "none")),
    (EntmaxBisectLoss, entmax.EntmaxBisectLoss, (1.75, 60, 512, "elementwise_mean")),
], ids=["Entmax15Loss(512)", "Entmax15Loss(None, 512, sum)", "SparsemaxLoss(10, 4, none)",
        "EntmaxBisectLoss(1.75, 60, 512, elementwise_mean)"])
def test_loss_modules_take_the_entmax_package_arguments_in_its_order(ours, theirs, args):
    """``Entmax15Loss(512)`` is ``k=512`` in entmax (a partial-sort size: no class is dropped)."""
    torch.testing.assert_close(ours(*args)(LOGITS, CLASSES), theirs(*args)(LOGITS, CLASSES))


def test_loss_modules_take_the_entmax_package_keywords():
    ours = Entmax15Loss(k=512, ignore_index=512, reduction="sum")(X=LOGITS, target=CLASSES)
    theirs = entmax.Entmax15Loss(k=512, ignore_index=512, reduction="sum")(X=LOGITS, target=CLASSES)
    torch.testing.assert_close(ours, theirs)
    assert SparsemaxLoss().k is None and Entmax15Loss().k == 100  # entmax's defaults


def test_loss_and_projection_functions_take_k_which_changes_nothing():
    small = LOGITS[:, :8]
    torch.testing.assert_close(sparsemax_loss(small, CLASSES % 8, k=3), entmax.sparsemax_loss(small, CLASSES % 8, k=3))
    torch.testing.assert_close(entmax15_loss(small, CLASSES % 8, k=3), entmax.entmax15_loss(small, CLASSES % 8, k=3))
    for ours, theirs, module in ((sparsemax, entmax.sparsemax, Sparsemax), (entmax15, entmax.entmax15, Entmax15)):
        torch.testing.assert_close(ours(small, -1, 2), theirs(small, -1, 2), atol=1e-12, rtol=0)
        torch.testing.assert_close(module(dim=0, k=3)(X=small), theirs(small, dim=0), atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="k .* must be a whole number >= 1 or None, got 0"):
        Entmax15Loss(0)


# ---------------------------------------------------------------------------------- grouped-query attention


@pytest.mark.parametrize("is_causal", [False, True])
def test_enable_gqa_is_torch_grouped_query_attention(is_causal):
    query, key, value = _randn(2, 6, 5, 8), _randn(2, 2, 5, 8, seed=1), _randn(2, 2, 5, 3, seed=2)
    expected = F.scaled_dot_product_attention(query, key, value, is_causal=is_causal, enable_gqa=True)
    ours = scaled_dot_product_attention(query, key, value, None, 0.0, is_causal, None, True)
    torch.testing.assert_close(ours, expected)
    sparse, weights = scaled_dot_product_attention(query, key, value, is_causal=is_causal, enable_gqa=True,
                                                   projection="sparsemax", return_weights=True)
    assert weights.shape == (2, 6, 5, 5) and (weights == 0).any()
    with pytest.raises(ValueError, match="H_q a multiple of H_kv"):
        scaled_dot_product_attention(query, _randn(2, 4, 5, 8), _randn(2, 4, 5, 8), enable_gqa=True)


# ------------------------------------------------------------------------------------ MultiHeadAttention


CONFIGURATIONS = list(itertools.product([True, False], [False, True], [False, True], [None, 5], [False, True]))


@pytest.mark.parametrize(("bias", "add_bias_kv", "add_zero_attn", "kdim", "batch_first"), CONFIGURATIONS)
def test_every_torch_configuration_computes_what_torch_computes(bias, add_bias_kv, add_zero_attn, kdim, batch_first):
    torch.manual_seed(0)
    reference = nn.MultiheadAttention(8, 2, 0.0, bias, add_bias_kv, add_zero_attn, kdim, kdim, batch_first)
    torch.manual_seed(0)
    ours = MultiHeadAttention(8, 2, 0.0, bias, add_bias_kv, add_zero_attn, kdim, kdim, batch_first)
    assert list(ours.state_dict()) == list(reference.state_dict())  # torch's names, in torch's order
    for (name, mine), theirs in zip(ours.state_dict().items(), reference.state_dict().values()):
        assert torch.equal(mine, theirs), f"{name}: not torch's initialisation"
    length, batch = (3, 4), 2
    query = _randn(batch, length[0], 8) if batch_first else _randn(length[0], batch, 8)
    key = _randn(batch, length[1], kdim or 8, seed=1) if batch_first else _randn(length[1], batch, kdim or 8, seed=1)
    padding = torch.tensor([[False] * 4, [False, False, True, True]])
    causal = torch.triu(torch.ones(3, 4, dtype=torch.bool), 1)
    for masks in ({}, {"key_padding_mask": padding}, {"attn_mask": causal},
                  {"attn_mask": causal.double().masked_fill(causal, -torch.inf), "key_padding_mask": padding,
                   "average_attn_weights": False}):
        for mine, theirs in zip(ours(query, key, key, **masks), reference(query, key, key, **masks)):
            torch.testing.assert_close(mine, theirs)
    unbatched_query, unbatched_key = (query[0], key[0]) if batch_first else (query[:, 0], key[:, 0])
    for mine, theirs in zip(ours(unbatched_query, unbatched_key, unbatched_key, key_padding_mask=padding[1]),
                            reference(unbatched_query, unbatched_key, unbatched_key, key_padding_mask=padding[1])):
        torch.testing.assert_close(mine, theirs)


def test_device_and_dtype_are_taken_and_from_torch_keeps_them_exactly():
    ours = MultiHeadAttention(8, 2, device="cpu", dtype=torch.float16, projection="entmax15")
    assert all(p.dtype == torch.float16 for p in ours.parameters())
    reference = nn.MultiheadAttention(8, 2, kdim=5, vdim=3, dtype=torch.float64)
    copy = MultiHeadAttention.from_torch(reference, projection="sparsemax")
    assert copy.projection_name == "sparsemax" and copy.kdim == 5 and copy.vdim == 3
    for mine, theirs in zip(copy.state_dict().values(), reference.state_dict().values()):
        assert mine.dtype == torch.float64 and torch.equal(mine, theirs)


def test_a_torch_state_dict_loads():
    reference = nn.MultiheadAttention(8, 2, add_bias_kv=True)
    ours = MultiHeadAttention(8, 2, add_bias_kv=True, projection="sparsemax")
    ours.load_state_dict(reference.state_dict())  # strict: every name matches
    assert torch.equal(ours.in_proj_weight, reference.in_proj_weight) and torch.equal(ours.bias_k, reference.bias_k)


def test_a_bad_shape_is_named_in_the_callers_layout():
    attention = MultiHeadAttention(8, 2)  # (len, batch, dim)
    with pytest.raises(ValueError, match=r"query must be \(len, batch, dim\) or unbatched \(len, dim\) like query, "
                                         r"with dim = 8; query has shape \(3, 2, 6\)"):
        attention(_randn(3, 2, 6), _randn(4, 2, 8), _randn(4, 2, 8))


def _layers(layer_type: type[nn.Module], projection: str) -> tuple[nn.Module, nn.Module]:
    """A torch Transformer layer (no dropout) and a copy whose attention modules are ours, with ``projection``."""
    torch.manual_seed(3)
    reference = layer_type(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True)
    ours = layer_type(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True)
    ours.load_state_dict(reference.state_dict())
    ours.self_attn = MultiHeadAttention.from_torch(reference.self_attn, projection=projection)
    if hasattr(reference, "multihead_attn"):
        ours.multihead_attn = MultiHeadAttention.from_torch(reference.multihead_attn, projection=projection)
    return reference, ours


def _call(layer: nn.Module, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    if isinstance(layer, nn.TransformerEncoderLayer):
        return layer(x, src_key_padding_mask=padding)
    memory = _randn(2, 6, 16, seed=5)
    causal = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
    return layer(x, memory, tgt_mask=causal, tgt_is_causal=True, memory_key_padding_mask=padding[:, :1].expand(2, 6))


@pytest.mark.parametrize("layer_type", [nn.TransformerEncoderLayer, nn.TransformerDecoderLayer])
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_inside_torch_transformer_layers_softmax_is_torch_and_sparsemax_is_sparsemax(layer_type, mode):
    x = _randn(2, 5, 16, seed=4)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    reference, ours = _layers(layer_type, "softmax")
    _, sparse = _layers(layer_type, "sparsemax")
    for layer in (reference, ours, sparse):
        getattr(layer, mode)()
    with torch.no_grad():  # in eval mode without grad torch's encoder layer takes its fused path when it may
        expected, output = _call(reference, x, padding), _call(ours, x, padding)
        sparse_output = _call(sparse, x, padding)
        sparse.train()
        sparse_reference = _call(sparse, x, padding)  # training mode: no fused path, this module's forward
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(sparse_output, sparse_reference)
    assert (sparse_output - expected).abs().max() > 1e-2, "the sparse layer computed softmax attention"


def test_in_a_transformer_encoder_built_with_it_padding_is_kept_out():
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True)
    layer.self_attn = MultiHeadAttention.from_torch(layer.self_attn, projection="entmax15")
    with pytest.warns(UserWarning, match="_qkv_same_embed_dim was not True"):  # torch: no nested tensors, then
        encoder = nn.TransformerEncoder(layer, 2).eval()
    x = _randn(2, 5, 16, seed=6)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    with torch.no_grad():
        output = encoder(x, src_key_padding_mask=padding)
        changed = x.clone()
        changed[1, 3:] = 1e3  # what padding holds changes nothing
        torch.testing.assert_close(encoder(changed, src_key_padding_mask=padding)[1, :3], output[1, :3])


def test_an_encoder_built_before_the_swap_gets_a_clear_error_not_softmax():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, batch_first=True), 1).eval()
    encoder.layers[0].self_attn = MultiHeadAttention.from_torch(encoder.layers[0].self_attn, projection="sparsemax")
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    with torch.no_grad(), pytest.raises(TypeError, match="nested tensor.*build the encoder after replacing self_attn"):
        encoder(_randn(2, 5, 16), src_key_padding_mask=padding)
