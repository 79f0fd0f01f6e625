"""The sparsemax loss (Martins & Astudillo 2016, eq. 17) and its binary case, the modified Huber loss.

Chapter 6 explains both. The sparsemax loss is to sparsemax what cross-entropy is to softmax:

    L(z; q) = −q·z + ½ Σ_{j∈S(z)} (z_j² − τ(z)²) + ½‖q‖²,      ∇_z L = sparsemax(z) − q,

with ``S(z)`` the support and ``τ(z)`` the threshold of ``sparsemax(z)``. Using ``Σ_S (z_j − τ) = 1`` the
middle term equals ``p·z − ½‖p‖²`` with ``p = sparsemax(z)``, which is how it is computed here. The loss is
convex, ≥ 0, and zero exactly when ``sparsemax(z) = q``.

With two classes and margin ``t = z_gold − z_other`` it reduces to a quarter of the modified Huber loss
(Zhang 2004): ``0`` for t ≥ 1, ``(1 − t)²/4`` for −1 < t < 1, ``−t`` for t ≤ −1
(:func:`binary_sparsemax_loss`, :func:`modified_huber_loss`).

Shapes: ``scores: (batch, num_classes)``; ``target``: class indices ``(batch,)``, a distribution
``(batch, num_classes)``, or a boolean multi-label matrix ``(batch, num_classes)`` (uniform over the gold
labels, the paper's multi-label target); the loss is per example, ``(batch,)``.
"""
from __future__ import annotations

import torch
from torch import Tensor

from sparse_tutorial._validation import check_floating, check_row_max, compute_dtype
from sparse_tutorial.sparsemax_eager import _sparsemax_2d


def multilabel_target(labels: Tensor) -> Tensor:
    """The uniform distribution over each row's gold labels: ``labels: (batch, num_classes)`` bool → float.

    Raises:
        ValueError: a row of ``labels`` has no gold label.
    """
    if labels.dtype != torch.bool or labels.dim() != 2:
        raise ValueError(f"labels must be a 2-d boolean tensor, got dtype {labels.dtype}, shape {tuple(labels.shape)}")
    counts = labels.sum(-1, keepdim=True)
    if (counts == 0).any():
        raise ValueError("labels has a row without any gold label; a target distribution needs one")
    return labels / counts


def _target_distribution(target: Tensor, scores: Tensor) -> Tensor:
    """``target`` (indices, distribution or boolean labels) as a ``(batch, num_classes)`` distribution."""
    batch, num_classes = scores.shape
    if not isinstance(target, Tensor):
        raise TypeError(f"target must be a torch.Tensor, got {type(target).__name__}")
    if target.dim() == 1 and not target.is_floating_point() and target.dtype != torch.bool:
        if target.shape[0] != batch:
            raise ValueError(f"target has {target.shape[0]} class indices but scores has {batch} rows")
        if ((target < 0) | (target >= num_classes)).any():
            raise ValueError(f"target class indices must lie in [0, {num_classes}), got "
                             f"min {int(target.min())}, max {int(target.max())}")
        return torch.zeros_like(scores).scatter_(1, target.long().unsqueeze(1), 1.0)
    if target.shape != scores.shape:
        raise ValueError(f"target must be class indices of shape ({batch},) or a distribution of shape "
                         f"{tuple(scores.shape)}, got shape {tuple(target.shape)} and dtype {target.dtype}")
    if target.dtype == torch.bool:
        return multilabel_target(target).to(scores.dtype)
    if not target.is_floating_point():
        raise ValueError(f"a target distribution must be floating point or boolean, got dtype {target.dtype}")
    target = target.to(scores.dtype)
    if (target < 0).any() or not torch.allclose(target.sum(-1), torch.ones(batch, dtype=target.dtype,
                                                                          device=target.device), atol=1e-4):
        raise ValueError("target rows must be probability distributions (non-negative, summing to 1)")
    return target


class SparsemaxLossFunction(torch.autograd.Function):
    """Sparsemax loss with the exact gradients ``∂L/∂z = p − q`` and ``∂L/∂q = q − z`` (``p = sparsemax(z)``)."""

    @staticmethod
    def forward(ctx, z: Tensor, q: Tensor) -> Tensor:  # noqa: D102 - documented on the class
        p = _sparsemax_2d(z, torch.zeros_like(z[:, :1]))[0]
        loss = ((p - q) * z).sum(1) - 0.5 * (p * p).sum(1) + 0.5 * (q * q).sum(1)
        ctx.save_for_backward(p, q, z)
        return loss.clamp_min_(0.0)

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, Tensor]:  # noqa: D102
        p, q, z = ctx.saved_tensors
        grad = grad_output.unsqueeze(1)
        return grad * (p - q), grad * (q - z)


def sparsemax_loss(scores: Tensor, target: Tensor) -> Tensor:
    """The sparsemax loss of Martins & Astudillo (2016, eq. 17), one value per example.

    Args:
        scores: ``(batch, num_classes)`` finite scores (logits).
        target: class indices ``(batch,)``, a distribution ``(batch, num_classes)``, or a boolean
            multi-label matrix ``(batch, num_classes)`` (made uniform over the gold labels).
    Returns:
        ``(batch,)``, ≥ 0, zero iff ``sparsemax(scores)`` equals the target distribution.
    """
    check_floating(scores, "scores")
    if scores.dim() != 2:
        raise ValueError(f"scores must have shape (batch, num_classes), got shape {tuple(scores.shape)}")
    check_floating(scores, "scores", dim=1)
    z = compute_dtype(scores)
    row_max = z.detach().amax(1, keepdim=True)
    check_row_max(row_max, "scores")
    if not torch.isfinite(z).all():
        raise ValueError("scores must be finite for the sparsemax loss (no -inf masking)")
    q = _target_distribution(target, z)
    # L is invariant to shifting z (Σ (p − q) = 0), so shift by the max to keep huge scores finite; the
    # clamp catches the overflow of a difference such as −3e38 − 3e38.
    shifted = (z - row_max).clamp_min(-torch.finfo(z.dtype).max)
    return SparsemaxLossFunction.apply(shifted, q).to(scores.dtype)


def binary_sparsemax_loss(margin: Tensor) -> Tensor:
    """Closed form of the two-class sparsemax loss as a function of the margin ``t = z_gold − z_other``.

    ``0`` for t ≥ 1, ``(1 − t)²/4`` for −1 < t < 1, ``−t`` for t ≤ −1; equals ``modified_huber_loss(t) / 4``.
    """
    return torch.where(margin <= -1, -margin, (1 - margin).clamp_min(0).square() / 4)


def modified_huber_loss(margin: Tensor) -> Tensor:
    """The modified Huber classification loss (Zhang 2004): ``max(0, 1 − t)²`` for t ≥ −1, else ``−4t``."""
    return torch.where(margin >= -1, (1 - margin).clamp_min(0).square(), -4 * margin)
