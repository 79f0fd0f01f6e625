"""Norms and entropy of attention weights, and the penalties built from them (Zhang et al. 2019, §III).

Chapter 2 shows why ‖α‖₁ cannot sparsify attention (it is 1 on the simplex, so its gradient through
softmax vanishes), chapter 3 the maximum-L∞ regularizer with its weak subgradient (eq. 14, 16), chapter 4
the minimum-entropy regularizer (eq. 15).

Per-slice values, along ``dim`` of ``weights: (..., src_len, ...)``:

* :func:`l1_norm` — ``Σ |α_j|``;
* :func:`linf_norm` — ``max_j |α_j|``; its gradient is the weak subgradient of eq. 16, ``sign(α_k) e_k``
  for the FIRST maximising index ``k`` (one-hot even on ties);
* :func:`entropy` — ``−Σ α_j log α_j`` with ``0 log 0 = 0``; gradient ``−(log α_j + 1)`` where ``α_j > 0``
  and 0 where ``α_j = 0`` (exact zeros from sparsemax), never NaN or inf.

Penalties to ADD to a loss that is minimised, averaged over real target tokens (torch's ``reduction``
chooses: :func:`reduce_per_token`), with ``weights: (batch, tgt_len, src_len)`` and ``target_mask: (batch,
tgt_len)`` (True = real token):
``entropy_penalty`` (mean entropy), ``linf_penalty`` (−mean max α: maximising the peak) and ``l1_penalty``
(mean ‖α‖₁, constant 1 on the simplex). ``PENALTIES`` maps their names to them.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor

from sparse_tutorial._validation import check_attention_weights, check_floating, check_mask


def l1_norm(weights: Tensor, dim: int = -1) -> Tensor:
    """``‖α‖₁ = Σ_j |α_j|`` along ``dim`` (Zhang et al. eq. 13); always 1 for attention weights."""
    check_floating(weights, "weights")
    return weights.abs().sum(dim)


class _LinfNorm(torch.autograd.Function):
    """``max_j |α_j|`` with the weak subgradient ``sign(α_k) e_k``, ``k`` the first maximiser (eq. 16)."""

    @staticmethod
    def forward(ctx, weights: Tensor, dim: int) -> Tensor:  # noqa: D102 - documented on the class
        first_argmax = weights.abs().argmax(dim, keepdim=True)
        ctx.dim = dim
        ctx.save_for_backward(weights, first_argmax)
        return weights.gather(dim, first_argmax).abs().squeeze(dim)

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None]:  # noqa: D102
        weights, first_argmax = ctx.saved_tensors
        sign = weights.gather(ctx.dim, first_argmax).sign()
        grad = torch.zeros_like(weights)
        return grad.scatter_(ctx.dim, first_argmax, sign * grad_output.unsqueeze(ctx.dim)), None


def linf_norm(weights: Tensor, dim: int = -1) -> Tensor:
    """``‖α‖_∞ = max_j |α_j|`` along ``dim`` (Zhang et al. eq. 14), with the one-hot weak subgradient (eq. 16).

    The gradient is ``sign(α_k)`` at the first index ``k`` that attains the maximum and 0 elsewhere, also on
    ties (``torch.amax`` would split it evenly among the tied entries instead).
    """
    check_floating(weights, "weights", dim)
    return _LinfNorm.apply(weights, dim)


def entropy(weights: Tensor, dim: int = -1) -> Tensor:
    """Shannon entropy ``−Σ_j α_j log α_j`` along ``dim`` (Zhang et al. eq. 15), in nats.

    ``0 log 0 = 0``, and the gradient at an exact zero is 0 (not ``+inf``): the logarithm only ever sees
    positive entries, the zeros take the other branch of ``torch.where``.
    """
    check_floating(weights, "weights")
    positive = weights > 0
    safe = torch.where(positive, weights, 1.0)
    return -torch.where(positive, weights * safe.log(), 0.0).sum(dim)


REDUCTIONS = ("mean", "sum", "none")
"""torch's ``reduction`` values, which every per-token quantity of the library takes."""


def reduce_per_token(per_token: Tensor, target_mask: Optional[Tensor] = None, reduction: str = "mean") -> Tensor:
    """``per_token: (batch, tgt_len)`` reduced over the real target tokens, the library's one convention for
    per-token quantities (the penalties here, :func:`~sparse_tutorial.coverage.coverage_loss`).

    Args:
        target_mask: ``(batch, tgt_len)`` bool, True = a real target token; None = every token counts.
        reduction: ``"mean"`` over the real tokens (0 if there are none), ``"sum"``, or ``"none"``: the
            per-token values, 0 at padded tokens.
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if target_mask is None:
        return {"mean": per_token.mean, "sum": per_token.sum, "none": lambda: per_token}[reduction]()
    check_mask(target_mask, "target_mask", *per_token.shape)
    kept = torch.where(target_mask, per_token, 0.0)
    if reduction == "none":
        return kept
    return kept.sum() if reduction == "sum" else kept.sum() / target_mask.sum().clamp_min(1)


def entropy_penalty(weights: Tensor, target_mask: Optional[Tensor] = None, reduction: str = "mean") -> Tensor:
    """Minimum-entropy regularizer (eq. 15): the entropy of the attention of each real target token, reduced
    by :func:`reduce_per_token` (the mean by default); ``weights: (batch, tgt_len, src_len)``,
    ``target_mask: (batch, tgt_len)`` or None (all count)."""
    check_attention_weights(weights)
    return reduce_per_token(entropy(weights), target_mask, reduction)


def linf_penalty(weights: Tensor, target_mask: Optional[Tensor] = None, reduction: str = "mean") -> Tensor:
    """Maximum-L∞ regularizer (eq. 14): ``−max_j α_j`` of each real target token, reduced as for
    :func:`entropy_penalty` (minimising it raises the peaks)."""
    check_attention_weights(weights)
    return -reduce_per_token(linf_norm(weights), target_mask, reduction)


def l1_penalty(weights: Tensor, target_mask: Optional[Tensor] = None, reduction: str = "mean") -> Tensor:
    """L1 regularizer (eq. 13): ``‖α‖₁`` of each real target token, reduced as for :func:`entropy_penalty` —
    1 on the simplex, so it does nothing."""
    check_attention_weights(weights)
    return reduce_per_token(l1_norm(weights), target_mask, reduction)


PENALTIES: dict[str, Callable[..., Tensor]] = {
    "entropy": entropy_penalty,
    "linf": linf_penalty,
    "l1": l1_penalty,
}
"""Name → penalty ``fn(weights, target_mask=None, reduction="mean")`` to add (times λ) to the training loss."""
