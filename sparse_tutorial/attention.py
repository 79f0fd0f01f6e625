"""Attention = a score + a mask + a projection, and the classic attention modules built from it.

Chapter 1 (*Attention in one page, and the zoo*) walks through this module and :mod:`sparse_tutorial.scores`
(the score functions, re-exported here); every later chapter builds on them.

Attention turns a query and a set of keys into a weight vector and a weighted average of values:

    e_j = score(q, k_j)                            scores:  (batch, src_len)
    α   = projection(e), masked e_j set to −∞     weights: (batch, src_len), on the simplex
    c   = Σ_j α_j v_j                              context: (batch, value_dim)

Shapes used throughout: ``query: (batch, query_dim)``, ``keys: (batch, src_len, key_dim)``,
``values: (batch, src_len, value_dim)``, ``mask: (batch, src_len)`` boolean with True = keep.

What is here, in reading order:

* :class:`Attention`: any score, any projection from :mod:`sparse_tutorial.projections`;
* :class:`LocalPAttention`: Luong et al. 2015 local-p, a Gaussian window around a predicted position;
* :class:`MultiHeadAttention`: Vaswani et al. 2017, equal to ``torch.nn.MultiheadAttention`` with softmax;
* :class:`ContextAttention` and :class:`HierarchicalAttention`: Yang et al. 2016, words → sentences → document;
* :class:`PointerAttention`: Vinyals et al. 2015, the attention distribution is the output distribution.

Every projection handles masked (−∞) positions itself: they get exactly zero weight and an all-masked row
gives all zeros, so nothing here needs a special case for padding. Masked keys and values are also set to
zero before they are used (``_zero_masked``): padding may hold anything, even NaN, and ``0 · NaN = NaN``
would otherwise leak into the context and the gradients. A NaN at a *kept* position still propagates. A
caller whose padding is zero already (an encoder that multiplied its states by the mask) says so by calling
``attention(query, keys, mask=mask, padding_is_zero=True)`` and saves those copies at every decoder step.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from sparse_tutorial._validation import check_mask, check_query_keys, check_shape
from sparse_tutorial.projections import Projection, alpha_entmax, get_projection
# The scores live in sparse_tutorial.scores; they are imported here too so that a chapter can take the whole
# zoo from one place: `from sparse_tutorial.attention import Attention, DotScore`.
from sparse_tutorial.scores import (  # noqa: F401
    SCORES, AdditiveScore, CosineScore, CoverageAdditiveScore, DotScore, GeneralScore, LocationScore,
    LocationSensitiveScore, ScaledDotScore, get_score, resolve_score)


def _resolve_projection(projection: str | Projection | nn.Module, projection_kwargs: dict) -> Projection | nn.Module:
    """A projection name (with its keyword arguments), a function ``fn(scores, dim=-1)``, or a module that
    projects the last dimension (``Sparsemax()``, ``AlphaEntmax(learnable=True)``, ``entmax.Entmax15()``):
    a module stays a submodule, so a learnable α trains with the attention."""
    if isinstance(projection, str):
        return get_projection(projection, **projection_kwargs)
    if projection_kwargs:
        raise TypeError(
            f"projection keyword arguments {sorted(projection_kwargs)} are only used with a projection name"
        )
    if isinstance(projection, nn.Module):
        if getattr(projection, "dim", -1) != -1:
            raise ValueError(f"a projection module in attention must project the last dimension (dim=-1), "
                             f"got {type(projection).__name__} with dim={projection.dim}")
        return projection
    if not callable(projection):
        raise TypeError(f"projection must be a name, a callable fn(scores, dim=-1) or a module, got {projection!r}")
    return projection


def _project(projection: Projection | nn.Module, scores: Tensor) -> Tensor:
    """``projection`` applied over the last dimension of ``scores``: a module as ``module(scores)`` (entmax's
    convention), a function as ``fn(scores, dim=-1)``."""
    return projection(scores) if isinstance(projection, nn.Module) else projection(scores, dim=-1)


def _projection_name(projection: str | Projection) -> str:
    """What ``repr`` shows: the name, or the callable's ``__name__``."""
    if isinstance(projection, str):
        return projection
    return getattr(projection, "__name__", type(projection).__name__)


def _zero_masked(tensor: Tensor, mask: Tensor) -> Tensor:
    """``tensor: (..., src_len, dim)`` with the vectors of masked positions (``mask: (..., src_len)`` False)
    set to zero, so that whatever padding holds (even NaN) cannot reach a result through ``0 · NaN``."""
    return tensor.masked_fill(~mask.unsqueeze(-1), 0.0)


def _weighted_sum(weights: Tensor, values: Tensor) -> Tensor:
    """``(batch, src_len) × (batch, src_len, value_dim) -> (batch, value_dim)``."""
    return torch.bmm(weights.unsqueeze(1), values).squeeze(1)


class Attention(nn.Module):
    """Attention = a score function + a boolean mask + a projection onto the simplex.

    Args:
        score: a score module (e.g. ``AdditiveScore(8, 8, 16)``) or the name of one that needs no
            dimensions (``"dot"``, ``"scaled_dot"``, ``"cosine"``); use
            :func:`~sparse_tutorial.scores.get_score` for the others.
        projection: a name from :data:`~sparse_tutorial.projections.registry.PROJECTIONS` (``"softmax"``,
            ``"sparsemax"``, ``"sparsegen"``, ``"entmax15"``, ``"temperature"``, ``"gumbel"``) or a callable
            ``fn(scores, dim=-1)``.
        **projection_kwargs: passed to the named projection, e.g. ``temperature=0.5`` or ``lam=0.5``.

    Example::

        attention = Attention(AdditiveScore(query_dim=4, key_dim=6, hidden_dim=8), projection="sparsemax")
        context, weights = attention(query, keys, mask=mask)   # (batch, 6), (batch, src_len)
    """

    def __init__(self, score: str | nn.Module, projection: str | Projection = "softmax",
                 **projection_kwargs: float | bool | torch.Generator) -> None:
        super().__init__()
        self.score = resolve_score(score)
        self.projection_name = _projection_name(projection)
        self.projection = _resolve_projection(projection, projection_kwargs)

    def forward(self, query: Tensor, keys: Tensor, values: Tensor | None = None, mask: Tensor | None = None,
                padding_is_zero: bool = False, **score_state: Tensor) -> tuple[Tensor, Tensor]:
        """Attend from one query per batch element over ``src_len`` keys.

        Args:
            query: ``(batch, query_dim)``.
            keys: ``(batch, src_len, key_dim)``.
            values: ``(batch, src_len, value_dim)``; defaults to ``keys``.
            mask: ``(batch, src_len)`` bool, True = keep; masked positions get exactly zero weight.
            padding_is_zero: the caller promises that ``keys`` and ``values`` are zero at the masked
                positions, so they are used as they are instead of copied with the masked vectors zeroed.
                Not checked: with NaN in the padding the context is NaN. A decoder that attends over the
                same encoder states at every step saves two copies of them and one masked gradient per
                step (``benchmarks/bench_nmt_epoch.py``).
            **score_state: extra inputs of the score, e.g. ``previous_weights=`` or ``coverage=``.

        Returns:
            ``context: (batch, value_dim)`` and ``weights: (batch, src_len)``, which sum to 1 over the kept
            positions (all zeros for a row with nothing kept).
        """
        check_query_keys(query, keys)
        batch, src_len = keys.shape[:2]
        values = keys if values is None else values
        check_shape(values, "values", batch=batch, src_len=src_len, value_dim=None)
        if mask is not None:
            check_mask(mask, "mask", batch=batch, src_len=src_len)
            if not padding_is_zero:
                keys, values = _zero_masked(keys, mask), _zero_masked(values, mask)
        scores = self.score(query, keys, **score_state)
        check_shape(scores, "scores", batch=batch, src_len=src_len)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = _project(self.projection, scores)
        return _weighted_sum(weights, values), weights

    def extra_repr(self) -> str:
        return f"projection={self.projection_name!r}"


class LocalPAttention(nn.Module):
    """Luong et al. (2015) local attention with predictive alignment ("local-p").

    A position is predicted from the query, ``p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))`` with ``S`` the source
    length of each row (the number of kept positions, so padding must be at the end), and only the window
    ``|s − p_t| ≤ D`` is attended to. Inside it the content weights are multiplied by a Gaussian centred at
    ``p_t``:

        a_t(s) = align(h_t, h̄_s) · exp(−(s − p_t)² / (2σ²)),   σ = D / 2

    where ``align`` is the chosen projection over the window positions. Positions are 0-based. The window
    edge is a hard cut, so ``p_t`` learns only through the Gaussian factor, as in the paper.

    **Normalisation.** After the Gaussian the weights no longer sum to 1 (their sum is in (0, 1]); Luong et
    al. use them as they are, and so do we by default (``renormalize=False``): the context is then a
    shrunken average. With ``renormalize=True`` the weights are divided by their sum so they lie on the
    simplex again — a variant, not the paper's formulation.

    Args:
        score: score module (or parameter-free name) giving the content scores.
        query_dim: size of ``h_t``.
        hidden_dim: size of ``W_p h_t``.
        half_window: ``D`` ≥ 1.
        projection: as for :class:`Attention`.
        **projection_kwargs: as for :class:`Attention`.
        renormalize: divide the windowed weights by their sum.
    """

    def __init__(self, score: str | nn.Module, query_dim: int, hidden_dim: int, half_window: int,
                 projection: str | Projection = "softmax", renormalize: bool = False,
                 **projection_kwargs: float | bool | torch.Generator) -> None:
        super().__init__()
        if half_window < 1:
            raise ValueError(f"half_window must be >= 1, got {half_window}")
        self.attention = Attention(score, projection, **projection_kwargs)
        self.position_hidden = nn.Linear(query_dim, hidden_dim, bias=False)
        self.position_out = nn.Linear(hidden_dim, 1, bias=False)
        self.half_window = half_window
        self.renormalize = renormalize

    def predict_position(self, query: Tensor, lengths: Tensor) -> Tensor:
        """``p_t = S · sigmoid(v_pᵀ tanh(W_p h_t))``: ``query: (batch, query_dim)``, ``lengths: (batch,)``
        -> ``positions: (batch,)`` in ``[0, S]``."""
        gate = torch.sigmoid(self.position_out(torch.tanh(self.position_hidden(query)))).squeeze(-1)
        return lengths.to(gate.dtype) * gate

    def forward(self, query: Tensor, keys: Tensor, values: Tensor | None = None, mask: Tensor | None = None,
                **score_state: Tensor) -> tuple[Tensor, Tensor]:
        """Shapes as in :meth:`Attention.forward`; returns ``(context, weights)`` where ``weights`` sum to at
        most 1 (exactly 1 with ``renormalize=True``) and are zero outside the window and on masked
        positions."""
        check_query_keys(query, keys)
        batch, src_len = keys.shape[:2]
        if mask is None:
            mask = torch.ones(batch, src_len, dtype=torch.bool, device=keys.device)
        check_mask(mask, "mask", batch=batch, src_len=src_len)
        values = _zero_masked(keys if values is None else values, mask)
        positions = self.predict_position(query, mask.sum(dim=-1))
        distance = torch.arange(src_len, device=keys.device, dtype=positions.dtype) - positions.unsqueeze(-1)
        in_window = mask & (distance.abs() <= self.half_window)
        _, align = self.attention(query, keys, values, mask=in_window, **score_state)
        sigma = self.half_window / 2
        weights = align * torch.exp(-distance.square() / (2 * sigma**2))
        if self.renormalize:
            weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
        return _weighted_sum(weights, values), weights

    def extra_repr(self) -> str:
        return f"half_window={self.half_window}, renormalize={self.renormalize}"


def _additive_mask(mask: Tensor | None, name: str, dtype: torch.dtype, keep: bool = False) -> Tensor | None:
    """A torch-convention mask as scores to add: boolean (→ 0 or −inf) or floating point (added as it is).

    A boolean mask marks with True the positions that may *not* be attended to, as
    ``torch.nn.MultiheadAttention`` reads ``key_padding_mask`` and ``attn_mask``, or with ``keep=True`` those
    that *may*, as ``torch.nn.functional.scaled_dot_product_attention`` reads ``attn_mask``. Any other dtype
    is refused, as torch refuses it (an integer mask of 0s and 1s added to the scores would put the weight
    on the masked keys).
    """
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name} must be a tensor, got {type(mask).__name__}")
    if mask.dtype == torch.bool:
        blocked = ~mask if keep else mask
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(blocked, float("-inf"))
    if not mask.is_floating_point():
        meaning = "may attend" if keep else "may not attend"
        raise TypeError(f"{name} must be boolean (True = {meaning}) or floating point (added to the scores), as "
                        f"in torch; got dtype {mask.dtype}")
    return mask.to(dtype)


def _as_projection(projection: str | float | Projection | nn.Module) -> Projection | nn.Module:
    """What :func:`scaled_dot_product_attention` takes as a projection, resolved: a number α is α-entmax."""
    if isinstance(projection, (int, float)) and not isinstance(projection, bool):
        return functools.partial(alpha_entmax, alpha=float(projection))
    return _resolve_projection(projection, {})


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False,
                                 projection: str | float | Projection | nn.Module = "softmax",
                                 return_weights: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """``torch.nn.functional.scaled_dot_product_attention`` with any projection: how to put sparsemax, entmax
    or a learned α into a Transformer.

    The arguments before ``projection`` are torch's, in its order, and mean what torch's mean: ``attn_mask``
    is boolean with True = *may* attend (torch's convention for this function, the opposite of
    ``nn.MultiheadAttention``'s) or float (added to the scores), any other dtype is refused; ``is_causal``
    applies the causal mask (and cannot be combined with ``attn_mask``); ``scale`` defaults to ``1/√E``;
    ``enable_gqa`` lets ``key`` and ``value`` have fewer heads than ``query`` (grouped-query attention: each
    key head serves ``H_q / H_kv`` consecutive query heads); dropout with ``dropout_p`` is applied to the
    weights, as torch does, whenever it is > 0. With ``projection="softmax"`` the output equals torch's, except
    that a query whose every key is masked gets zero weights and a zero output, not NaN.

    Args:
        query: ``(..., H_q, tgt_len, E)`` (the head dimension only matters with ``enable_gqa``).
        key: ``(..., H_kv, src_len, E)``.
        value: ``(..., H_kv, src_len, E_v)``.
        projection: a name of :data:`~sparse_tutorial.projections.registry.PROJECTIONS` (``"softmax"``,
            ``"sparsemax"``, ``"entmax15"`` ...), a number α ≥ 1 (α-entmax), a function ``fn(scores, dim)`` or
            a module projecting the last dimension (e.g. a learnable ``AlphaEntmax``).
        return_weights: also return the weights (before dropout), ``(..., H_q, tgt_len, src_len)``.

    Returns:
        ``(..., H_q, tgt_len, E_v)``, and the weights with ``return_weights``.
    """
    if is_causal and attn_mask is not None:
        raise ValueError("pass either attn_mask or is_causal, not both (as torch's scaled_dot_product_attention)")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must lie in [0, 1), got {dropout_p}")
    if enable_gqa:
        if query.dim() < 3 or key.dim() < 3 or query.shape[-3] % key.shape[-3]:
            raise ValueError(f"enable_gqa needs query (..., H_q, L, E) and key (..., H_kv, S, E) with H_q a "
                             f"multiple of H_kv; got query {tuple(query.shape)} and key {tuple(key.shape)}")
        groups = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(groups, -3), value.repeat_interleave(groups, -3)
    tgt_len, src_len = query.shape[-2], key.shape[-2]
    scores = query @ key.transpose(-2, -1) * (scale if scale is not None else 1.0 / math.sqrt(query.shape[-1]))
    if is_causal:
        attn_mask = torch.ones(tgt_len, src_len, dtype=torch.bool, device=query.device).tril()
    added = _additive_mask(attn_mask, "attn_mask", scores.dtype, keep=True)
    if added is not None:
        scores = scores + added
    weights = _project(_as_projection(projection), scores)
    dropped = nn.functional.dropout(weights, dropout_p) if dropout_p > 0 else weights
    output = dropped @ value
    return (output, weights) if return_weights else output


class MultiHeadAttention(nn.Module):
    """``torch.nn.MultiheadAttention`` with any projection (Vaswani et al. 2017):

        head_r = projection(Q W_r^Q (K W_r^K)ᵀ / √d_k) V W_r^V,   output = [head_1; …; head_{n_h}] W^O

    Everything but the projection is torch's, so it drops into code written for torch's module (as
    ``self_attn`` of ``nn.TransformerEncoderLayer``, say):

    * the constructor takes torch's arguments in torch's order (``embed_dim, num_heads, dropout, bias,
      add_bias_kv, add_zero_attn, kdim, vdim, batch_first, device, dtype``), then ``projection`` by keyword;
    * the parameters are torch's, with torch's names, layout and initialisation (torch builds them), so a
      torch module's ``state_dict`` loads, and the same seed gives the same weights;
    * ``forward`` takes torch's arguments with their meaning: ``batch_first`` layouts, unbatched
      ``(len, embed_dim)`` input, ``key_padding_mask`` and ``attn_mask`` (boolean True = may *not* attend, or
      float masks added to the scores; other dtypes are refused), ``need_weights``, ``average_attn_weights``
      and ``is_causal`` (a hint that ``attn_mask`` is the causal mask, which must then be given).

    With ``projection="softmax"`` it computes what torch's module computes, except that a row whose every key
    is masked gets zero weights, not NaN. The weights are returned before dropout.

    torch's Transformer layers skip ``self_attn.forward`` in inference when they can and run fused C++
    kernels of softmax attention instead; they look at ``self_attn._qkv_same_embed_dim`` to decide. That
    attribute is therefore ``False`` here, always: every call runs this module's projection
    (``packed_in_projection`` says whether q, k and v share torch's packed ``in_proj_weight``).

    Every argument before ``projection`` is ``torch.nn.MultiheadAttention``'s, with its meaning.

    Args:
        projection: as for :class:`Attention`; e.g. ``AlphaEntmax(1.5, learnable=True,
            alpha_shape=(num_heads, 1, 1))`` learns one α per head (Correia et al. 2019).
        **projection_kwargs: as for :class:`Attention`.
    """

    _qkv_same_embed_dim = False
    """torch's switch for its fused softmax kernels (class docstring): never, here."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: torch.device | str | None = None,
                 dtype: torch.dtype | None = None, *, projection: str | Projection | nn.Module = "softmax",
                 **projection_kwargs: float | bool | torch.Generator) -> None:
        super().__init__()
        if embed_dim % num_heads != 0:  # torch's own check is an AssertionError
            raise ValueError(f"embed_dim={embed_dim} must be divisible by num_heads={num_heads}")
        # torch builds the parameters (names, layout, initialisation, and its checks of the arguments)
        reference = nn.MultiheadAttention(embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn, kdim,
                                          vdim, batch_first, device=device, dtype=dtype)
        for name, parameter in reference._parameters.items():
            self.register_parameter(name, parameter)
        if not add_bias_kv:  # plain None attributes then, as in torch
            self.bias_k = self.bias_v = None
        self.out_proj = reference.out_proj
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, reference.head_dim
        self.kdim, self.vdim, self.dropout = reference.kdim, reference.vdim, dropout
        self.batch_first, self.add_zero_attn = batch_first, add_zero_attn
        self.packed_in_projection: bool = reference._qkv_same_embed_dim
        self.projection_name = _projection_name(projection)
        self.projection = _resolve_projection(projection, projection_kwargs)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention, projection: str | Projection | nn.Module = "softmax",
                   **projection_kwargs: float | bool | torch.Generator) -> MultiHeadAttention:
        """A :class:`MultiHeadAttention` configured as ``module`` (every constructor argument, the device and the
        dtype) with a copy of its weights."""
        weight = module.out_proj.weight
        copy = cls(module.embed_dim, module.num_heads, module.dropout, module.in_proj_bias is not None,
                   module.bias_k is not None, module.add_zero_attn, module.kdim, module.vdim, module.batch_first,
                   device=weight.device, dtype=weight.dtype, projection=projection, **projection_kwargs)
        copy.load_state_dict(module.state_dict())
        return copy

    def _in_projections(self) -> tuple[tuple[Tensor, Tensor, Tensor], tuple[Tensor | None, ...]]:
        """The weights and biases that map query, key and value to the heads' inputs."""
        weights = (self.in_proj_weight.chunk(3) if self.packed_in_projection
                   else (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight))
        biases = self.in_proj_bias.chunk(3) if self.in_proj_bias is not None else (None, None, None)
        return weights, biases

    def _split_heads(self, x: Tensor) -> Tensor:
        """``(batch, len, embed_dim) -> (batch, heads, len, head_dim)``."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, query: Tensor, key: Tensor, value: Tensor | None = None,
                key_padding_mask: Tensor | None = None, need_weights: bool = True, attn_mask: Tensor | None = None,
                average_attn_weights: bool = True, is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """Attend from every target position over every source position, as ``torch.nn.MultiheadAttention``.

        Args:
            query: ``(tgt_len, batch, embed_dim)``, ``(batch, tgt_len, embed_dim)`` with ``batch_first``, or
                unbatched ``(tgt_len, embed_dim)``.
            key: ``(src_len, batch, kdim)``, ``(batch, src_len, kdim)`` with ``batch_first``, or ``(src_len, kdim)``.
            value: the layout of ``key`` with ``vdim``; defaults to ``key``.
            key_padding_mask: ``(batch, src_len)`` (``(src_len,)`` unbatched), boolean True = padding (may not be
                attended to), or float (added to the scores).
            need_weights: also return the attention weights.
            attn_mask: ``(tgt_len, src_len)`` or ``(batch * num_heads, tgt_len, src_len)``, boolean True = may
                not attend (e.g. ``torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)`` is causal), or
                float (added to the scores).
            average_attn_weights: return the weights averaged over the heads rather than per head.
            is_causal: a hint that ``attn_mask`` is the causal mask (it must be given, as in torch).

        Returns:
            ``output`` (the layout of ``query``) and, with ``need_weights``, the weights before dropout,
            ``(batch, tgt_len, src_len)`` averaged over the heads or ``(batch, num_heads, tgt_len, src_len)``
            (without the batch dimension for unbatched input).
        """
        if is_causal and attn_mask is None:
            raise ValueError("is_causal is a hint that attn_mask is the causal mask (as in "
                             "torch.nn.MultiheadAttention): pass the mask as attn_mask too")
        value = key if value is None else value
        if query.is_nested:
            raise TypeError("query is a nested tensor: an nn.TransformerEncoder built while its layers held torch's "
                            "attention converts its input for torch's fused kernels; build the encoder after "
                            "replacing self_attn, or with enable_nested_tensor=False")
        batched = query.dim() == 3
        layout = "(batch, len, dim)" if self.batch_first else "(len, batch, dim)"
        for name, tensor, size in (("query", query, self.embed_dim), ("key", key, self.kdim),
                                   ("value", value, self.vdim)):
            if tensor.dim() != (3 if batched else 2) or tensor.shape[-1] != size:
                raise ValueError(f"{name} must be {layout} or unbatched (len, dim) like query, with dim = {size}; "
                                 f"query has shape {tuple(query.shape)}, {name} {tuple(tensor.shape)}")
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        batch, tgt_len, _ = query.shape
        check_shape(key, "key", batch=batch, src_len=None, kdim=self.kdim)
        src_len = key.shape[1]
        check_shape(value, "value", batch=batch, src_len=src_len, vdim=self.vdim)

        padding = _additive_mask(key_padding_mask, "key_padding_mask", query.dtype)
        if padding is not None:
            check_shape(padding, "key_padding_mask", batch=batch, src_len=src_len)
            keep = padding != float("-inf")  # padding may hold anything, even NaN: it never reaches the output
            key, value = _zero_masked(key, keep), _zero_masked(value, keep)
        added = _additive_mask(attn_mask, "attn_mask", query.dtype)
        if added is not None:
            if added.dim() == 3:
                check_shape(added, "attn_mask", batch_x_heads=batch * self.num_heads, tgt_len=tgt_len,
                            src_len=src_len)
                added = added.view(batch, self.num_heads, tgt_len, src_len)
            else:
                check_shape(added, "attn_mask", tgt_len=tgt_len, src_len=src_len)
        (w_q, w_k, w_v), (b_q, b_k, b_v) = self._in_projections()
        q, k, v = F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)
        extra_keys = []  # torch's extra keys: the learned bias_k/bias_v, then a zero key/value
        if self.bias_k is not None:
            extra_keys.append((self.bias_k.expand(batch, 1, -1), self.bias_v.expand(batch, 1, -1)))
        if self.add_zero_attn:
            extra_keys.append((k.new_zeros(batch, 1, self.embed_dim), v.new_zeros(batch, 1, self.embed_dim)))
        for extra_k, extra_v in extra_keys:  # attended to by every query: unmasked
            k, v = torch.cat([k, extra_k], 1), torch.cat([v, extra_v], 1)
            padding = None if padding is None else F.pad(padding, (0, 1))
            added = None if added is None else F.pad(added, (0, 1))

        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (batch, heads, tgt_len, src_len)
        if padding is not None:
            scores = scores + padding[:, None, None, :]
        if added is not None:
            scores = scores + added
        weights = _project(self.projection, scores)
        heads = F.dropout(weights, self.dropout, self.training) @ v
        output = self.out_proj(heads.transpose(1, 2).reshape(batch, tgt_len, self.embed_dim))
        if not batched:
            output, weights = output.squeeze(0), weights.squeeze(0)
        elif not self.batch_first:
            output = output.transpose(0, 1)
        if not need_weights:
            return output, None
        return output, weights.mean(-3) if average_attn_weights else weights

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, projection={self.projection_name!r}, "
                f"batch_first={self.batch_first}")


class ContextAttention(nn.Module):
    """Attention with a learned context vector (Yang et al. 2016, also the FLAN classifier of Meister et al.).

        u_t = tanh(W h_t + b),   α = projection(u_tᵀ u_w),   s = Σ_t α_t h_t

    There is no external query: ``u_w`` is a parameter that learns "what is informative". Works on any
    number of leading dimensions, so a whole batch of documents is attended in one call.
    """

    def __init__(self, input_dim: int, attention_dim: int, projection: str | Projection = "softmax",
                 **projection_kwargs: float | bool | torch.Generator) -> None:
        super().__init__()
        self.input_dim = input_dim
        self.hidden = nn.Linear(input_dim, attention_dim)
        self.context_vector = nn.Parameter(torch.empty(attention_dim).uniform_(-1, 1) / math.sqrt(attention_dim))
        self.projection = _resolve_projection(projection, projection_kwargs)

    def forward(self, inputs: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``inputs: (..., src_len, input_dim)``, ``mask: (..., src_len)`` bool True = keep ->
        ``(summary: (..., input_dim), weights: (..., src_len))``; a row with nothing kept gives zeros."""
        if inputs.dim() < 2 or inputs.shape[-1] != self.input_dim:
            raise ValueError(f"inputs must have shape (..., src_len, input_dim={self.input_dim}), "
                             f"got {tuple(inputs.shape)}")
        if mask is not None:
            check_mask(mask, "mask", *inputs.shape[:-1])
            inputs = _zero_masked(inputs, mask)
        scores = torch.tanh(self.hidden(inputs)) @ self.context_vector
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = _project(self.projection, scores)
        return (weights.unsqueeze(-2) @ inputs).squeeze(-2), weights


class HierarchicalAttentionOutput(NamedTuple):
    """What :class:`HierarchicalAttention` returns."""

    document: Tensor
    """``(batch, sentence_dim)``: the document vector ``v``."""
    word_weights: Tensor
    """``(batch, n_sents, n_words)``: ``α_it``, zero on padded words and padded sentences."""
    sentence_weights: Tensor
    """``(batch, n_sents)``: ``α_i``, zero on padded sentences."""


class HierarchicalAttention(nn.Module):
    """Hierarchical attention of Yang et al. (2016): words → sentence vectors → document vector.

        word level:      u_it = tanh(W_w h_it + b_w),  α_it = proj_t(u_itᵀ u_w),  s_i = Σ_t α_it h_it
        sentence level:  u_i  = tanh(W_s h_i + b_s),   α_i  = proj_i(u_iᵀ u_s),   v   = Σ_i α_i h_i

    In the paper a sentence encoder (a BiGRU) turns the sentence vectors ``s_i`` into annotations ``h_i``
    between the two levels. :meth:`forward` attends directly over the ``s_i``; a model with a sentence
    encoder calls :meth:`attend_words`, its encoder, then :meth:`attend_sentences`.

    A sentence whose words are all padding has no kept word: its word weights are all zero, its vector is
    zero and it is masked at the sentence level, so it never produces NaN.
    """

    def __init__(self, input_dim: int, attention_dim: int, projection: str | Projection = "softmax",
                 sentence_dim: int | None = None, **projection_kwargs: float | bool | torch.Generator) -> None:
        super().__init__()
        self.word_attention = ContextAttention(input_dim, attention_dim, projection, **projection_kwargs)
        self.sentence_attention = ContextAttention(sentence_dim or input_dim, attention_dim, projection,
                                                   **projection_kwargs)

    def attend_words(self, word_annotations: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``word_annotations: (batch, n_sents, n_words, input_dim)``, ``mask: (batch, n_sents,
        n_words)`` -> ``(sentences: (batch, n_sents, input_dim), word_weights: (batch, n_sents, n_words))``."""
        check_shape(word_annotations, "word_annotations", batch=None, n_sents=None, n_words=None,
                     input_dim=self.word_attention.input_dim)
        return self.word_attention(word_annotations, mask)

    def attend_sentences(self, sentence_annotations: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``sentence_annotations: (batch, n_sents, sentence_dim)``, ``mask: (batch, n_sents)`` ->
        ``(document: (batch, sentence_dim), sentence_weights: (batch, n_sents))``."""
        check_shape(sentence_annotations, "sentence_annotations", batch=None, n_sents=None,
                     sentence_dim=self.sentence_attention.input_dim)
        return self.sentence_attention(sentence_annotations, mask)

    def forward(self, word_annotations: Tensor, mask: Tensor | None = None) -> HierarchicalAttentionOutput:
        """``word_annotations: (batch, n_sents, n_words, input_dim)``, ``mask: (batch, n_sents,
        n_words)`` bool True = real word; a sentence is real iff it has a real word."""
        sentences, word_weights = self.attend_words(word_annotations, mask)
        sentence_mask = None if mask is None else mask.any(dim=-1)
        document, sentence_weights = self.attend_sentences(sentences, sentence_mask)
        return HierarchicalAttentionOutput(document, word_weights, sentence_weights)


class PointerAttention(nn.Module):
    """Pointer network attention (Vinyals et al. 2015): the attention distribution *is* the output.

        u_j = vᵀ tanh(W_1 e_j + W_2 d_i),   p(C_i = j | …) = projection(u)_j

    Over the input positions instead of a vocabulary, so the output "dictionary" grows with the input.

    Training: with softmax use ``F.cross_entropy(scores, target)`` on the returned (masked, −∞) scores; with
    a sparse projection the probability of the gold position can be exactly 0 and the log-likelihood is
    infinite, so use the matching loss instead (e.g. ``sparsemax_loss(scores, target)``).
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int, projection: str | Projection = "softmax",
                 **projection_kwargs: float | bool | torch.Generator) -> None:
        super().__init__()
        self.score = AdditiveScore(query_dim, key_dim, hidden_dim)
        self.projection = _resolve_projection(projection, projection_kwargs)

    def forward(self, query: Tensor, keys: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``query: (batch, query_dim)`` (decoder state ``d_i``), ``keys: (batch, src_len, key_dim)``
        (encoder states ``e_j``), ``mask: (batch, src_len)`` -> ``(probabilities, scores)``, both
        ``(batch, src_len)``: a distribution over input positions (zero where masked) and the masked
        scores ``u`` (−∞ where masked) for the loss."""
        check_query_keys(query, keys)
        if mask is not None:
            check_mask(mask, "mask", batch=keys.shape[0], src_len=keys.shape[1])
            keys = _zero_masked(keys, mask)
        scores = self.score(query, keys)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return _project(self.projection, scores), scores

