"""The score functions of the attention zoo: how well a query matches each key, ``e_j = score(q, k_j)``.

Chapter 1 (*Attention in one page, and the zoo*) compares them; chapter 8 (*Coverage*) adds the coverage
feature of :class:`CoverageAdditiveScore`. :mod:`sparse_tutorial.attention` turns scores into weights.

Every score module has ``forward(query, keys, **state) -> scores (batch, src_len)`` with
``query: (batch, query_dim)`` and ``keys: (batch, src_len, key_dim)``:

* :class:`DotScore`, :class:`ScaledDotScore`, :class:`GeneralScore` (Luong et al. 2015; Vaswani et al. 2017);
* :class:`AdditiveScore` (Bahdanau et al. 2015, Luong's "concat"), :class:`CosineScore` (Graves et al. 2014),
  :class:`LocationScore` (Luong "location");
* :class:`LocationSensitiveScore` (Chorowski et al. 2015) and :class:`CoverageAdditiveScore` (Tu et al. 2016,
  eq. 21 of Zhang et al. 2019), additive scores with the previous weights or the coverage as state;
* the registry :data:`SCORES`, :func:`get_score`, which builds one by name, and :func:`resolve_score`.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sparse_tutorial._validation import check_query_keys, check_shape


def _check_same_dim(score: str, query: Tensor, keys: Tensor) -> None:
    """Raise unless ``query`` and ``keys`` have the same last dim, as the ``score`` (a parameter-free one) needs."""
    if query.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"the {score} score needs query_dim == key_dim, got query_dim={query.shape[-1]} "
            f"and key_dim={keys.shape[-1]}"
        )


class DotScore(nn.Module):
    """Luong et al. (2015) "dot": ``e_j = qᵀ k_j``. Needs ``query_dim == key_dim``; no parameters."""

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        """``query: (batch, dim)``, ``keys: (batch, src_len, dim)`` -> ``scores: (batch, src_len)``."""
        check_query_keys(query, keys)
        _check_same_dim("dot", query, keys)
        return torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1)


class ScaledDotScore(nn.Module):
    """Vaswani et al. (2017) scaled dot product: ``e_j = qᵀ k_j / √dim``, keeping scores O(1) as dim grows."""

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        """``query: (batch, dim)``, ``keys: (batch, src_len, dim)`` -> ``scores: (batch, src_len)``."""
        check_query_keys(query, keys)
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
        check_query_keys(query, keys, self.query_to_key.in_features, self.query_to_key.out_features)
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
        check_query_keys(query, keys, self.query_proj.in_features, self.key_proj.in_features)
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        else:
            check_shape(projected_keys, "projected_keys", batch=keys.shape[0], src_len=keys.shape[1],
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
        check_query_keys(query, keys)
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
        check_query_keys(query, keys, self.position_scores.in_features)
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
        check_shape(previous_weights, "previous_weights", batch=keys.shape[0], src_len=keys.shape[1])
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
            check_shape(coverage, "coverage", batch=batch, src_len=src_len)
            coverage = coverage.unsqueeze(-1)
        else:
            check_shape(coverage, "coverage", batch=batch, src_len=src_len, coverage_dim=self.coverage_dim)
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


def resolve_score(score: str | nn.Module) -> nn.Module:
    """A score module as it is, or the one named ``score`` (a name of a score that needs no dimensions)."""
    if isinstance(score, str):
        return get_score(score)
    if not isinstance(score, nn.Module):
        raise TypeError(f"score must be a score name or an nn.Module, got {type(score).__name__}")
    return score
