"""Coverage: remembering how much attention each source word has already received.

Chapter 8 (*Coverage*) explains this module; chapters 10 and 11 use it in translation and summarization.

A decoder that forgets where it has looked over-translates (attends to the same word again and again) and
under-translates (never attends to some words). Coverage keeps a running record per source word:

* See et al. (2017), accumulated attention: ``c_t = Σ_{t' < t} a_{t'}`` — :func:`accumulate_coverage` for a
  whole ``(batch, tgt_len, src_len)`` attention tensor, :func:`update_coverage` step by step — and the
  coverage loss ``Σ_i min(a_{t,i}, c_{t,i})`` (:func:`coverage_loss`), which penalises attending again to
  what is already covered.
* Tu et al. (2016), as written in eq. 22 of Zhang et al. (2019):

      C_{i,j} = f(C_{i−1,j}, α_{ij}, z_i, h_j)

  with ``f`` a learned update. :class:`NeuralCoverage` takes ``f`` to be a GRU cell run at every source
  position in parallel (Tu et al.'s "neural network based coverage"; ``C`` is a vector); and
  :class:`FertilityCoverage` is their "linguistic coverage" ``C_{i,j} = C_{i−1,j} + α_{ij} / Φ_j`` with a
  predicted fertility ``Φ_j = N · sigmoid(U_f h_j)`` (``C`` is a scalar).

The coverage enters the next attention step through
:class:`sparse_tutorial.scores.CoverageAdditiveScore` (eq. 21 of Zhang et al.):
``e_{ij} = v_aᵀ tanh(W_a z_i + U_a h_j + V_c C_{i−1,j})``. Every coverage starts at zero.

Shapes: ``weights: (batch, tgt_len, src_len)`` for a whole sequence or ``(batch, src_len)`` for one step;
``target_mask: (batch, tgt_len)`` and ``mask: (batch, src_len)`` are boolean, True = real token.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from sparse_tutorial._validation import check_attention_weights, check_mask, check_shape
from sparse_tutorial.regularizers import REDUCTIONS, reduce_per_token


def accumulate_coverage(weights: Tensor) -> Tensor:
    """See et al. (2017) coverage before every step: ``c_t = Σ_{t' < t} a_{t'}`` (so ``c_0 = 0``).

    Args:
        weights: ``(batch, tgt_len, src_len)`` attention of every decoder step.

    Returns:
        ``coverage: (batch, tgt_len, src_len)``, the exclusive cumulative sum over target steps.
    """
    check_attention_weights(weights)
    return torch.cat([torch.zeros_like(weights[:, :1]), weights[:, :-1].cumsum(dim=1)], dim=1)


def update_coverage(coverage: Tensor, weights: Tensor) -> Tensor:
    """One decoder step of See et al.'s coverage: ``c_{t+1} = c_t + a_t``.

    Args:
        coverage: ``(batch, src_len)`` coverage before the step (start from zeros).
        weights: ``(batch, src_len)`` attention of the step.
    """
    if coverage.shape != weights.shape:
        raise ValueError(
            f"coverage and weights must have the same shape (batch, src_len), got {tuple(coverage.shape)} "
            f"and {tuple(weights.shape)}"
        )
    return coverage + weights


def coverage_loss(weights: Tensor, coverage: Tensor | None = None, target_mask: Tensor | None = None,
                  reduction: str = "mean") -> Tensor:
    """See et al. (2017) coverage loss: ``covloss_t = Σ_i min(a_{t,i}, c_{t,i})``.

    It is bounded by ``Σ_i a_{t,i} = 1`` and is zero iff no step attends to a word already covered.

    Args:
        weights: ``(batch, tgt_len, src_len)`` attention of every step.
        coverage: ``(batch, tgt_len, src_len)`` coverage before every step; by default
            :func:`accumulate_coverage` of ``weights``.
        target_mask: ``(batch, tgt_len)`` bool, True = real target token; padded steps do not count.
        reduction: as for the penalties (:func:`~sparse_tutorial.regularizers.reduce_per_token`): ``"mean"``
            over the real target tokens (0 if there are none), ``"sum"``, or ``"none"``, the per-step values
            ``(batch, tgt_len)``, zero on padded steps.
    """
    check_attention_weights(weights)
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if coverage is None:
        coverage = accumulate_coverage(weights)
    elif coverage.shape != weights.shape:
        raise ValueError(
            f"coverage must have the shape of weights (batch, tgt_len, src_len) = {tuple(weights.shape)}, "
            f"got {tuple(coverage.shape)}"
        )
    return reduce_per_token(torch.minimum(weights, coverage).sum(dim=-1), target_mask, reduction)


class NeuralCoverage(nn.Module):
    """Tu et al. (2016) neural coverage, eq. 22 of Zhang et al. (2019): ``C_{i,j} = GRU(C_{i−1,j}, [α_{ij};
    z_i; h_j])``.

    One GRU cell, shared by all source positions and run on all of them at once: its hidden state is the
    coverage vector of a source word and its input is that word's attention weight, the decoder state and the
    word's annotation. Padded source positions (``mask`` False) keep their coverage unchanged.

    Args:
        query_dim: size of the decoder state ``z_i``.
        key_dim: size of the source annotation ``h_j``.
        coverage_dim: size of the coverage vector ``C_{i,j}``; use the same value in
            :class:`~sparse_tutorial.scores.CoverageAdditiveScore`.
    """

    def __init__(self, query_dim: int, key_dim: int, coverage_dim: int) -> None:
        super().__init__()
        self.query_dim, self.key_dim, self.coverage_dim = query_dim, key_dim, coverage_dim
        self.cell = nn.GRUCell(1 + query_dim + key_dim, coverage_dim)

    def forward(self, coverage: Tensor, weights: Tensor, query: Tensor, keys: Tensor,
                mask: Tensor | None = None) -> Tensor:
        """Update the coverage after one decoder step.

        Args:
            coverage: ``(batch, src_len, coverage_dim)`` coverage ``C_{i−1}`` (zeros before the first step).
            weights: ``(batch, src_len)`` attention ``α_i`` of this step.
            query: ``(batch, query_dim)`` decoder state ``z_i``.
            keys: ``(batch, src_len, key_dim)`` source annotations ``h_j``.
            mask: ``(batch, src_len)`` bool, True = real source token.

        Returns:
            ``coverage: (batch, src_len, coverage_dim)``, the updated ``C_i``.
        """
        check_shape(keys, "keys", batch=None, src_len=None, key_dim=self.key_dim)
        batch, src_len = keys.shape[:2]
        check_shape(coverage, "coverage", batch, src_len, self.coverage_dim)
        check_shape(weights, "weights", batch, src_len)
        check_shape(query, "query", batch, self.query_dim)
        inputs = torch.cat([weights.unsqueeze(-1), query.unsqueeze(1).expand(-1, src_len, -1), keys], dim=-1)
        updated = self.cell(inputs.reshape(batch * src_len, -1), coverage.reshape(batch * src_len, -1))
        updated = updated.view(batch, src_len, self.coverage_dim)
        if mask is None:
            return updated
        check_mask(mask, "mask", batch, src_len)
        return torch.where(mask.unsqueeze(-1), updated, coverage)


class FertilityCoverage(nn.Module):
    """Tu et al. (2016) linguistic coverage with fertility: ``C_{i,j} = C_{i−1,j} + α_{ij} / Φ_j``.

    ``Φ_j = N · sigmoid(U_f h_j)`` is the predicted number of target words that source word j produces, at
    most ``N = max_fertility``; a word is fully covered (``C = 1``) once it received that much attention.
    This is eq. 22 of Zhang et al. with ``f`` fixed to a fertility-scaled sum.
    """

    def __init__(self, key_dim: int, max_fertility: float = 2.0) -> None:
        super().__init__()
        self.key_dim = key_dim
        self.max_fertility = max_fertility
        self.fertility_proj = nn.Linear(key_dim, 1, bias=False)

    def fertility(self, keys: Tensor) -> Tensor:
        """``Φ = N · sigmoid(U_f h)``: ``keys: (batch, src_len, key_dim)`` -> ``(batch, src_len)`` in (0, N)."""
        check_shape(keys, "keys", batch=None, src_len=None, key_dim=self.key_dim)
        return self.max_fertility * torch.sigmoid(self.fertility_proj(keys)).squeeze(-1)

    def forward(self, coverage: Tensor, weights: Tensor, keys: Tensor) -> Tensor:
        """``coverage, weights: (batch, src_len)``, ``keys: (batch, src_len, key_dim)`` -> updated
        ``coverage: (batch, src_len)``. Padded positions have zero weight, so their coverage stays put."""
        fertility = self.fertility(keys)
        batch, src_len = fertility.shape
        check_shape(coverage, "coverage", batch=batch, src_len=src_len)
        check_shape(weights, "weights", batch=batch, src_len=src_len)
        return coverage + weights / fertility

    def extra_repr(self) -> str:
        return f"key_dim={self.key_dim}, max_fertility={self.max_fertility}"
