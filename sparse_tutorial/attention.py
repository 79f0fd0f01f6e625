"""The attention zoo: score functions, ``Attention`` = score + mask + projection, and the classic variants.

Chapter 1 (*Attention in one page, and the zoo*) walks through this module; every later chapter builds on it.

Attention turns a query and a set of keys into a weight vector and a weighted average of values:

    e_j = score(q, k_j)                            scores:  (batch, src_len)
    α   = projection(e), masked e_j set to −∞     weights: (batch, src_len), on the simplex
    c   = Σ_j α_j v_j                              context: (batch, value_dim)

Shapes used throughout: ``query: (batch, query_dim)``, ``keys: (batch, src_len, key_dim)``,
``values: (batch, src_len, value_dim)``, ``mask: (batch, src_len)`` boolean with True = keep.

What is here, in reading order:

* score modules, each ``forward(query, keys, **state) -> scores (batch, src_len)``:
  :class:`DotScore`, :class:`ScaledDotScore`, :class:`GeneralScore`, :class:`AdditiveScore` (Bahdanau /
  Luong "concat"), :class:`CosineScore`, :class:`LocationScore` (Luong "location"),
  :class:`LocationSensitiveScore` (Chorowski et al. 2015) and :class:`CoverageAdditiveScore`
  (Tu et al. 2016, eq. 21 of Zhang et al. 2019); registry :data:`SCORES` and :func:`get_score`;
* :class:`Attention`: any score, any projection from :mod:`sparse_tutorial.projections`;
* :class:`LocalPAttention`: Luong et al. 2015 local-p, a Gaussian window around a predicted position;
* :class:`MultiHeadAttention`: Vaswani et al. 2017, equal to ``torch.nn.MultiheadAttention`` with softmax;
* :class:`ContextAttention` and :class:`HierarchicalAttention`: Yang et al. 2016, words → sentences → document;
* :class:`PointerAttention`: Vinyals et al. 2015, the attention distribution is the output distribution.

Every projection handles masked (−∞) positions itself: they get exactly zero weight and an all-masked row
gives all zeros, so nothing here needs a special case for padding. Masked keys and values are also set to
zero before they are used (``_zero_masked``): padding may hold anything, even NaN, and ``0 · NaN = NaN``
would otherwise leak into the context and the gradients. A NaN at a *kept* position still propagates.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sparse_tutorial._validation import check_mask
from sparse_tutorial.projections import Projection, get_projection


def _check_shape(name: str, tensor: Tensor, **dims: int | None) -> None:
    """Raise a ``ValueError`` naming ``name`` unless ``tensor`` has the given dims (None = any size).

    The message reads e.g. ``mask must have shape (batch, src_len) = (2, 5), got (2, 4)``.
    """
    expected = tuple(dims.values())
    if tensor.dim() == len(expected) and all(
        size is None or size == actual for size, actual in zip(expected, tensor.shape)
    ):
        return
    layout = "(" + ", ".join(dims) + ")"
    sizes = "(" + ", ".join("?" if size is None else str(size) for size in expected) + ")"
    raise ValueError(f"{name} must have shape {layout} = {sizes}, got {tuple(tensor.shape)}")


def _check_mask(name: str, mask: Tensor, **dims: int) -> None:
    """Check that ``mask`` is a boolean tensor (True = keep) with exactly the given dims."""
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a boolean tensor (True = keep), got dtype {mask.dtype}")
    _check_shape(name, mask, **dims)


def _check_query_keys(query: Tensor, keys: Tensor, query_dim: int | None = None,
                      key_dim: int | None = None) -> None:
    _check_shape("query", query, batch=None, query_dim=query_dim)
    _check_shape("keys", keys, batch=query.shape[0], src_len=None, key_dim=key_dim)


def _check_same_dim(score: str, query: Tensor, keys: Tensor) -> None:
    if query.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"the {score} score needs query_dim == key_dim, got query_dim={query.shape[-1]} "
            f"and key_dim={keys.shape[-1]}"
        )


def _resolve_projection(projection: str | Projection, projection_kwargs: dict) -> Projection:
    """A projection name (with its keyword arguments) or a ready callable ``fn(scores, dim=-1)``."""
    if isinstance(projection, str):
        return get_projection(projection, **projection_kwargs)
    if projection_kwargs:
        raise TypeError(
            f"projection keyword arguments {sorted(projection_kwargs)} are only used with a projection name"
        )
    if not callable(projection):
        raise TypeError(f"projection must be a name or a callable fn(scores, dim=-1), got {projection!r}")
    return projection


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


# ----------------------------------------------------------------------------------------------- scores


class DotScore(nn.Module):
    """Luong et al. (2015) "dot": ``e_j = qᵀ k_j``. Needs ``query_dim == key_dim``; no parameters."""

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        """``query: (batch, dim)``, ``keys: (batch, src_len, dim)`` -> ``scores: (batch, src_len)``."""
        _check_query_keys(query, keys)
        _check_same_dim("dot", query, keys)
        return torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1)


class ScaledDotScore(nn.Module):
    """Vaswani et al. (2017) scaled dot product: ``e_j = qᵀ k_j / √dim``, keeping scores O(1) as dim grows."""

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        """``query: (batch, dim)``, ``keys: (batch, src_len, dim)`` -> ``scores: (batch, src_len)``."""
        _check_query_keys(query, keys)
        _check_same_dim("scaled dot", query, keys)
        return torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1) / math.sqrt(keys.shape[-1])


class GeneralScore(nn.Module):
    """Luong et al. (2015) "general" (bilinear): ``e_j = qᵀ W_a k_j`` with ``W_a: (query_dim, key_dim)``."""

    def __init__(self, query_dim: int, key_dim: int) -> None:
        super().__init__()
        # Computed as (W_aᵀ q)ᵀ k_j: one matrix-vector product per query instead of one per key.
        self.query_to_key = nn.Linear(query_dim, key_dim, bias=False)

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        """``query: (batch, query_dim)``, ``keys: (batch, src_len, key_dim)`` -> ``(batch, src_len)``."""
        _check_query_keys(query, keys, self.query_to_key.in_features, self.query_to_key.out_features)
        return torch.bmm(keys, self.query_to_key(query).unsqueeze(-1)).squeeze(-1)


class AdditiveScore(nn.Module):
    """Bahdanau et al. (2015) additive score, Luong's "concat", eq. 9 of Zhang et al. (2019).

    ``e_j = vᵀ tanh(W q + U k_j)``, which equals ``vᵀ tanh(W_a [q; k_j])`` with ``W_a = [W, U]``.

    ``U k_j`` does not depend on the decoder step: a decoder may compute it once per source sentence with
    :meth:`project_keys` and pass it to every step as ``projected_keys=`` (through ``Attention`` too).
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.query_proj = nn.Linear(query_dim, hidden_dim, bias=False)
        self.key_proj = nn.Linear(key_dim, hidden_dim, bias=False)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def project_keys(self, keys: Tensor) -> Tensor:
        """``U k_j``: ``keys: (batch, src_len, key_dim)`` -> ``(batch, src_len, hidden_dim)``."""
        return self.key_proj(keys)

    def _features(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        """``W q + U k_j`` for every j: ``(batch, src_len, hidden_dim)``."""
        _check_query_keys(query, keys, self.query_proj.in_features, self.key_proj.in_features)
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        else:
            _check_shape("projected_keys", projected_keys, batch=keys.shape[0], src_len=keys.shape[1],
                         hidden_dim=self.key_proj.out_features)
        return self.query_proj(query).unsqueeze(1) + projected_keys

    def forward(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None = None) -> Tensor:
        """``query: (batch, query_dim)``, ``keys: (batch, src_len, key_dim)``, optional ``projected_keys``
        from :meth:`project_keys` -> ``scores: (batch, src_len)``."""
        return self.v(torch.tanh(self._features(query, keys, projected_keys))).squeeze(-1)


class CosineScore(nn.Module):
    """Content-based score of Graves et al. (2014): ``e_j = scale · cos(q, k_j)``.

    Cosines lie in [−1, 1], so with ``scale = 1`` a softmax over them is close to uniform; ``scale`` (fixed,
    not learned) sharpens it, like an inverse temperature.
    """

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        """``query: (batch, dim)``, ``keys: (batch, src_len, dim)`` -> ``scores: (batch, src_len)``."""
        _check_query_keys(query, keys)
        _check_same_dim("cosine", query, keys)
        return self.scale * F.cosine_similarity(query.unsqueeze(1), keys, dim=-1, eps=1e-8)

    def extra_repr(self) -> str:
        return f"scale={self.scale}"


class LocationScore(nn.Module):
    """Luong et al. (2015) "location": ``e = W_a q`` — the scores depend on the query only.

    ``W_a`` has one row per source position up to ``max_src_len``; the scores are truncated to the actual
    ``src_len`` (the keys are only used for their length), and padding is removed by the mask as usual.
    """

    def __init__(self, query_dim: int, max_src_len: int) -> None:
        super().__init__()
        self.max_src_len = max_src_len
        self.position_scores = nn.Linear(query_dim, max_src_len, bias=False)

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        """``query: (batch, query_dim)``, ``keys: (batch, src_len, key_dim)`` -> ``(batch, src_len)``."""
        _check_query_keys(query, keys, self.position_scores.in_features)
        src_len = keys.shape[1]
        if src_len > self.max_src_len:
            raise ValueError(f"keys has src_len={src_len} > max_src_len={self.max_src_len} of LocationScore")
        return self.position_scores(query)[:, :src_len]


class LocationSensitiveScore(AdditiveScore):
    """Chorowski et al. (2015) location-sensitive ("hybrid") score.

    The previous alignment ``α_{i−1}`` is convolved with ``n_filters`` filters ``F`` of width ``kernel_size``,
    ``f_i = F * α_{i−1}``, and the result enters the additive score as an extra feature:

        e_{i,j} = wᵀ tanh(W s_{i−1} + V h_j + U f_{i,j} + b)

    State: ``previous_weights: (batch, src_len)`` — the weights of the previous decoder step (zeros, or a
    one-hot on the first position, before the first step).
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int, n_filters: int = 10,
                 kernel_size: int = 31) -> None:
        super().__init__(query_dim, key_dim, hidden_dim)
        if kernel_size % 2 != 1:
            raise ValueError(f"kernel_size must be odd so the convolution is centred, got {kernel_size}")
        self.location_conv = nn.Conv1d(1, n_filters, kernel_size, padding=kernel_size // 2, bias=False)
        self.location_proj = nn.Linear(n_filters, hidden_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(hidden_dim))

    def forward(self, query: Tensor, keys: Tensor, previous_weights: Tensor,
                projected_keys: Tensor | None = None) -> Tensor:
        """``previous_weights: (batch, src_len)`` -> ``scores: (batch, src_len)``."""
        features = self._features(query, keys, projected_keys)
        _check_shape("previous_weights", previous_weights, batch=keys.shape[0], src_len=keys.shape[1])
        location = self.location_conv(previous_weights.unsqueeze(1)).transpose(1, 2)
        return self.v(torch.tanh(features + self.location_proj(location) + self.bias)).squeeze(-1)


class CoverageAdditiveScore(AdditiveScore):
    """Coverage-augmented additive score of Tu et al. (2016), eq. 21 of Zhang et al. (2019).

        e_{ij} = v_aᵀ tanh(W_a z_i + U_a h_j + V_c C_{i−1,j})

    ``C_{i−1,j}`` is the coverage of source word j before step i (see :mod:`sparse_tutorial.coverage`):
    either a scalar per source word (``coverage_dim=1``, e.g. the accumulated attention of See et al. 2017,
    state shape ``(batch, src_len)``) or a vector (``coverage_dim > 1``, Tu et al.'s neural coverage, state
    shape ``(batch, src_len, coverage_dim)``). ``V_c`` maps it into the hidden space; Zhang et al. write the
    sum without it, which is the case ``coverage_dim = hidden_dim``, ``V_c = I``.
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int, coverage_dim: int = 1) -> None:
        super().__init__(query_dim, key_dim, hidden_dim)
        self.coverage_dim = coverage_dim
        self.coverage_proj = nn.Linear(coverage_dim, hidden_dim, bias=False)

    def forward(self, query: Tensor, keys: Tensor, coverage: Tensor,
                projected_keys: Tensor | None = None) -> Tensor:
        """``coverage: (batch, src_len)`` or ``(batch, src_len, coverage_dim)`` -> ``(batch, src_len)``."""
        features = self._features(query, keys, projected_keys)
        batch, src_len = keys.shape[:2]
        if self.coverage_dim == 1:
            _check_shape("coverage", coverage, batch=batch, src_len=src_len)
            coverage = coverage.unsqueeze(-1)
        else:
            _check_shape("coverage", coverage, batch=batch, src_len=src_len, coverage_dim=self.coverage_dim)
        return self.v(torch.tanh(features + self.coverage_proj(coverage))).squeeze(-1)

    def extra_repr(self) -> str:
        return f"coverage_dim={self.coverage_dim}"


SCORES: dict[str, type[nn.Module]] = {
    "dot": DotScore,
    "scaled_dot": ScaledDotScore,
    "general": GeneralScore,
    "additive": AdditiveScore,
    "concat": AdditiveScore,
    "cosine": CosineScore,
    "location": LocationScore,
    "location_sensitive": LocationSensitiveScore,
    "coverage_additive": CoverageAdditiveScore,
}
"""Score name -> score class; ``"concat"`` (Luong) is another name for ``"additive"`` (Bahdanau)."""


def get_score(name: str, **kwargs: int | float) -> nn.Module:
    """Build a score module by name, e.g. ``get_score("additive", query_dim=8, key_dim=8, hidden_dim=16)``.

    ``"dot"``, ``"scaled_dot"`` and ``"cosine"`` need no arguments; the others take the dimensions of their
    class (``query_dim``, ``key_dim``, ``hidden_dim``, ``max_src_len``, ...).
    """
    if name not in SCORES:
        raise ValueError(f"score must be one of {sorted(SCORES)}, got {name!r}")
    try:
        return SCORES[name](**kwargs)
    except TypeError as error:
        raise TypeError(f"score {name!r} ({SCORES[name].__name__}) needs its dimensions: {error}") from None


def _resolve_score(score: str | nn.Module) -> nn.Module:
    if isinstance(score, str):
        return get_score(score)
    if not isinstance(score, nn.Module):
        raise TypeError(f"score must be a score name or an nn.Module, got {type(score).__name__}")
    return score


# -------------------------------------------------------------------------------------------- attention


class Attention(nn.Module):
    """Attention = a score function + a boolean mask + a projection onto the simplex.

    Args:
        score: a score module (e.g. ``AdditiveScore(8, 8, 16)``) or the name of one that needs no
            dimensions (``"dot"``, ``"scaled_dot"``, ``"cosine"``); use :func:`get_score` for the others.
        projection: a name from :data:`sparse_tutorial.projections.PROJECTIONS` (``"softmax"``,
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
        self.score = _resolve_score(score)
        self.projection_name = _projection_name(projection)
        self.projection = _resolve_projection(projection, projection_kwargs)

    def forward(self, query: Tensor, keys: Tensor, values: Tensor | None = None, mask: Tensor | None = None,
                **score_state: Tensor) -> tuple[Tensor, Tensor]:
        """Attend from one query per batch element over ``src_len`` keys.

        Args:
            query: ``(batch, query_dim)``.
            keys: ``(batch, src_len, key_dim)``.
            values: ``(batch, src_len, value_dim)``; defaults to ``keys``.
            mask: ``(batch, src_len)`` bool, True = keep; masked positions get exactly zero weight.
            **score_state: extra inputs of the score, e.g. ``previous_weights=`` or ``coverage=``.

        Returns:
            ``context: (batch, value_dim)`` and ``weights: (batch, src_len)``, which sum to 1 over the kept
            positions (all zeros for a row with nothing kept).
        """
        _check_query_keys(query, keys)
        batch, src_len = keys.shape[:2]
        values = keys if values is None else values
        _check_shape("values", values, batch=batch, src_len=src_len, value_dim=None)
        if mask is not None:
            _check_mask("mask", mask, batch=batch, src_len=src_len)
            keys, values = _zero_masked(keys, mask), _zero_masked(values, mask)
        scores = self.score(query, keys, **score_state)
        _check_shape("scores", scores, batch=batch, src_len=src_len)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = self.projection(scores, dim=-1)
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
        _check_query_keys(query, keys)
        batch, src_len = keys.shape[:2]
        if mask is None:
            mask = torch.ones(batch, src_len, dtype=torch.bool, device=keys.device)
        _check_mask("mask", mask, batch=batch, src_len=src_len)
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


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention (Vaswani et al. 2017) with any projection.

        head_h = projection(Q W_h^Q (K W_h^K)ᵀ / √d) V W_h^V,   output = [head_1; …; head_H] W^O

    With ``projection="softmax"`` it computes exactly what ``torch.nn.MultiheadAttention(batch_first=True)``
    computes; :meth:`from_torch` copies the weights of one. Unlike it, fully masked rows give zero weights
    (not NaN), masks are True = keep, and the returned weights are per head and taken before dropout.

    Args:
        embed_dim: model size; must be divisible by ``num_heads``.
        num_heads: number of heads H; each has size ``d = embed_dim // num_heads``.
        projection: as for :class:`Attention`.
        **projection_kwargs: as for :class:`Attention`.
        dropout: dropout probability on the attention weights (training only).
        bias: whether the four linear maps have biases.
    """

    def __init__(self, embed_dim: int, num_heads: int, projection: str | Projection = "softmax",
                 dropout: float = 0.0, bias: bool = True,
                 **projection_kwargs: float | bool | torch.Generator) -> None:
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim={embed_dim} must be divisible by num_heads={num_heads}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.projection_name = _projection_name(projection)
        self.projection = _resolve_projection(projection, projection_kwargs)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention, projection: str | Projection = "softmax",
                   **projection_kwargs: float | bool | torch.Generator) -> MultiHeadAttention:
        """A :class:`MultiHeadAttention` with the weights (copied) of ``module``.

        Supports the standard configuration: equal query/key/value sizes, no ``add_bias_kv``, no
        ``add_zero_attn``.
        """
        if not module._qkv_same_embed_dim or module.bias_k is not None or module.add_zero_attn:
            raise ValueError("module must use kdim = vdim = embed_dim, add_bias_kv=False, add_zero_attn=False")
        has_bias = module.in_proj_bias is not None
        copy = cls(module.embed_dim, module.num_heads, projection, dropout=module.dropout, bias=has_bias,
                   **projection_kwargs)
        with torch.no_grad():
            for proj, weight in zip((copy.q_proj, copy.k_proj, copy.v_proj), module.in_proj_weight.chunk(3)):
                proj.weight.copy_(weight)
            copy.out_proj.weight.copy_(module.out_proj.weight)
            if has_bias:
                for proj, bias in zip((copy.q_proj, copy.k_proj, copy.v_proj), module.in_proj_bias.chunk(3)):
                    proj.bias.copy_(bias)
                copy.out_proj.bias.copy_(module.out_proj.bias)
        return copy.to(module.in_proj_weight.device, module.in_proj_weight.dtype)

    def _split_heads(self, x: Tensor) -> Tensor:
        """``(batch, len, embed_dim) -> (batch, heads, len, head_dim)``."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, query: Tensor, key: Tensor, value: Tensor | None = None,
                key_padding_mask: Tensor | None = None, attn_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Attend from every target position over every source position.

        Args:
            query: ``(batch, tgt_len, embed_dim)``.
            key: ``(batch, src_len, embed_dim)``.
            value: ``(batch, src_len, embed_dim)``; defaults to ``key``.
            key_padding_mask: ``(batch, src_len)`` bool, True = keep (a real source token).
            attn_mask: ``(tgt_len, src_len)`` bool, True = may attend (e.g. a causal lower triangle).

        Returns:
            ``output: (batch, tgt_len, embed_dim)`` and ``weights: (batch, heads, tgt_len, src_len)``.
        """
        _check_shape("query", query, batch=None, tgt_len=None, embed_dim=self.embed_dim)
        batch, tgt_len, _ = query.shape
        _check_shape("key", key, batch=batch, src_len=None, embed_dim=self.embed_dim)
        src_len = key.shape[1]
        value = key if value is None else value
        _check_shape("value", value, batch=batch, src_len=src_len, embed_dim=self.embed_dim)
        if key_padding_mask is not None:
            _check_mask("key_padding_mask", key_padding_mask, batch=batch, src_len=src_len)
            key, value = _zero_masked(key, key_padding_mask), _zero_masked(value, key_padding_mask)
        q = self._split_heads(self.q_proj(query))
        k = self._split_heads(self.k_proj(key))
        v = self._split_heads(self.v_proj(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (batch, heads, tgt_len, src_len)
        if key_padding_mask is not None:
            scores = scores.masked_fill(~key_padding_mask[:, None, None, :], float("-inf"))
        if attn_mask is not None:
            _check_mask("attn_mask", attn_mask, tgt_len=tgt_len, src_len=src_len)
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        weights = self.projection(scores, dim=-1)
        heads = self.dropout(weights) @ v
        output = self.out_proj(heads.transpose(1, 2).reshape(batch, tgt_len, self.embed_dim))
        return output, weights

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, projection={self.projection_name!r}"


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
            check_mask(mask, "mask", inputs.shape[:-1])
            inputs = _zero_masked(inputs, mask)
        scores = torch.tanh(self.hidden(inputs)) @ self.context_vector
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = self.projection(scores, dim=-1)
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

    def attend_words(self, word_annotations: Tensor, word_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``word_annotations: (batch, n_sents, n_words, input_dim)``, ``word_mask: (batch, n_sents,
        n_words)`` -> ``(sentences: (batch, n_sents, input_dim), word_weights: (batch, n_sents, n_words))``."""
        _check_shape("word_annotations", word_annotations, batch=None, n_sents=None, n_words=None,
                     input_dim=self.word_attention.input_dim)
        return self.word_attention(word_annotations, word_mask)

    def attend_sentences(self, sentence_annotations: Tensor,
                         sentence_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``sentence_annotations: (batch, n_sents, sentence_dim)``, ``sentence_mask: (batch, n_sents)`` ->
        ``(document: (batch, sentence_dim), sentence_weights: (batch, n_sents))``."""
        _check_shape("sentence_annotations", sentence_annotations, batch=None, n_sents=None,
                     sentence_dim=self.sentence_attention.input_dim)
        return self.sentence_attention(sentence_annotations, sentence_mask)

    def forward(self, word_annotations: Tensor, word_mask: Tensor | None = None) -> HierarchicalAttentionOutput:
        """``word_annotations: (batch, n_sents, n_words, input_dim)``, ``word_mask: (batch, n_sents,
        n_words)`` bool True = real word; a sentence is real iff it has a real word."""
        sentences, word_weights = self.attend_words(word_annotations, word_mask)
        sentence_mask = None if word_mask is None else word_mask.any(dim=-1)
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
        _check_query_keys(query, keys)
        if mask is not None:
            _check_mask("mask", mask, batch=keys.shape[0], src_len=keys.shape[1])
            keys = _zero_masked(keys, mask)
        scores = self.score(query, keys)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return self.projection(scores, dim=-1), scores

