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

import functools
from typing import Callable

import torch
from torch import Tensor, nn

from sparse_tutorial._validation import check_floating, check_row_max, compute_dtype
from sparse_tutorial.projections.alpha_entmax import _check_alpha_number, entmax_bisect
from sparse_tutorial.projections import entmax15
from sparse_tutorial.projections.sparse import _check_k
from sparse_tutorial.projections.sparsemax_eager import _sparsemax_2d


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


def _shifted_scores(scores: Tensor, loss: str) -> Tensor:
    """``scores: (batch, num_classes)`` checked, in the compute dtype, minus each row's maximum: every loss
    here is invariant to that shift (``Σ (p − q) = 0``), which keeps huge scores finite (the clamp catches
    the overflow of a difference such as −3e38 − 3e38)."""
    check_floating(scores, "scores")
    if scores.dim() != 2:
        raise ValueError(f"scores must have shape (batch, num_classes), got shape {tuple(scores.shape)}")
    check_floating(scores, "scores", dim=1)
    z = compute_dtype(scores)
    row_max = z.detach().amax(1, keepdim=True)
    check_row_max(row_max, "scores")
    if not torch.isfinite(z).all():
        raise ValueError(f"scores must be finite for the {loss} loss (no -inf masking)")
    return (z - row_max).clamp_min(-torch.finfo(z.dtype).max)


def sparsemax_loss(scores: Tensor, target: Tensor, k: int | None = None) -> Tensor:
    """The sparsemax loss of Martins & Astudillo (2016, eq. 17), one value per example (as the ``entmax``
    package's ``sparsemax_loss``, which takes class indices; a distribution or label set is also taken here).

    Args:
        scores: ``(batch, num_classes)`` finite scores (logits).
        target: class indices ``(batch,)``, a distribution ``(batch, num_classes)``, or a boolean
            multi-label matrix ``(batch, num_classes)`` (made uniform over the gold labels).
        k: the ``entmax`` package's partial-sort size; the loss is exact without it, so it changes nothing.
    Returns:
        ``(batch,)``, ≥ 0, zero iff ``sparsemax(scores)`` equals the target distribution.
    """
    _check_k(k)
    shifted = _shifted_scores(scores, "sparsemax")
    return SparsemaxLossFunction.apply(shifted, _target_distribution(target, shifted)).to(scores.dtype)


def _tsallis_entropy(p: Tensor, alpha: float) -> Tensor:
    """Tsallis α-entropy of each row of ``p: (batch, n)``, ``(1 − Σ p^α) / (α(α − 1))``; Shannon's at α = 1."""
    if alpha == 1:
        return torch.special.entr(p).sum(1)
    return (1 - p.pow(alpha).sum(1)) / (alpha * (alpha - 1))


class FenchelYoungLossFunction(torch.autograd.Function):
    """The Fenchel-Young loss of α-entmax (Blondel et al. 2020), ``L(z; q) = (p − q)·z + H_α(p) − H_α(q)``
    with ``p = α-entmax(z)`` and ``H_α`` the Tsallis entropy; ``∂L/∂z = p − q`` (the target gets no gradient)."""

    @staticmethod
    def forward(ctx, z: Tensor, q: Tensor, weights: Tensor, alpha: float) -> Tensor:  # noqa: D102
        loss = ((weights - q) * z).sum(1) + _tsallis_entropy(weights, alpha) - _tsallis_entropy(q, alpha)
        ctx.save_for_backward(weights - q)
        return loss.clamp_min_(0.0)

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None, None, None]:  # noqa: D102
        (difference,) = ctx.saved_tensors
        return grad_output.unsqueeze(1) * difference, None, None, None


def _fenchel_young_loss(scores: Tensor, target: Tensor, alpha: float, project: Callable[[Tensor], Tensor]) -> Tensor:
    """:class:`FenchelYoungLossFunction` of ``scores`` (checked and shifted) and ``target``, with ``project``
    computing α-entmax."""
    shifted = _shifted_scores(scores, f"{alpha}-entmax")
    q = _target_distribution(target, shifted)
    return FenchelYoungLossFunction.apply(shifted, q, project(shifted.detach()), float(alpha)).to(scores.dtype)


def entmax_bisect_loss(scores: Tensor, target: Tensor, alpha: float = 1.5, n_iter: int = 50) -> Tensor:
    """The α-entmax loss, one value per example (the ``entmax`` package's ``entmax_bisect_loss``): convex,
    ≥ 0, zero iff ``α-entmax(scores)`` equals the target distribution, gradient ``α-entmax(scores) − q``.
    α = 2 is :func:`sparsemax_loss`, α = 1 the cross-entropy of softmax.

    Args:
        scores: ``(batch, num_classes)`` finite scores (logits).
        target: as for :func:`sparsemax_loss`.
        alpha: a number ≥ 1.
        n_iter: bisection steps of :func:`~sparse_tutorial.projections.entmax_bisect`.
    Returns:
        ``(batch,)``.
    """
    _check_alpha_number(alpha)
    if alpha == 2:
        return sparsemax_loss(scores, target)
    return _fenchel_young_loss(scores, target, alpha, lambda z: entmax_bisect(z, alpha, n_iter=n_iter))


def entmax15_loss(scores: Tensor, target: Tensor, k: int | None = None) -> Tensor:
    """The 1.5-entmax loss (the ``entmax`` package's ``entmax15_loss``), with the exact 1.5-entmax (``k``, the
    package's partial-sort size, changes nothing)."""
    _check_k(k)
    return _fenchel_young_loss(scores, target, 1.5, entmax15)


class ReducedLoss(nn.Module):
    """A per-example loss ``per_example(scores, target) -> (batch,)`` with torch's ``reduction`` and
    ``ignore_index``: the base of the loss modules below.

    ``reduction``: ``"mean"`` over the examples whose target is not ignored (0 when all are, where torch
    gives NaN; ``"elementwise_mean"``, the ``entmax`` package's name, is accepted), ``"sum"`` or ``"none"``
    (``(batch,)``, 0 at ignored examples). ``ignore_index`` applies to class-index targets.
    """

    def __init__(self, per_example: Callable[[Tensor, Tensor], Tensor], ignore_index: int = -100,
                 reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in ("mean", "sum", "none", "elementwise_mean"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        if not isinstance(ignore_index, int) or isinstance(ignore_index, bool):
            raise TypeError(f"ignore_index must be a whole number (a class index), got {ignore_index!r}")
        self.per_example, self.ignore_index = per_example, ignore_index
        self.reduction = "mean" if reduction == "elementwise_mean" else reduction

    def forward(self, X: Tensor, target: Tensor) -> Tensor:  # noqa: N803 - the entmax package's argument name
        """``X: (batch, num_classes)`` scores, ``target`` as for :func:`sparsemax_loss`."""
        indices = target.dim() == 1 and not target.is_floating_point() and target.dtype != torch.bool
        ignored = target == self.ignore_index if indices else torch.zeros(len(target), dtype=torch.bool,
                                                                          device=target.device)
        losses = self.per_example(X, target.masked_fill(ignored, 0) if indices else target)
        losses = losses.masked_fill(ignored, 0.0)
        if self.reduction == "none":
            return losses
        total = losses.sum()
        return total if self.reduction == "sum" else total / (~ignored).sum().clamp_min(1)


class SparsemaxLoss(ReducedLoss):
    """:func:`sparsemax_loss` as a module: ``entmax.SparsemaxLoss(k=None, ignore_index=-100, reduction)``, its
    arguments in its order (``k`` changes nothing here, as for :func:`~sparse_tutorial.projections.sparsemax`)."""

    def __init__(self, k: int | None = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        _check_k(k)
        super().__init__(sparsemax_loss, ignore_index, reduction)
        self.k = k


class Entmax15Loss(ReducedLoss):
    """:func:`entmax15_loss` as a module: ``entmax.Entmax15Loss(k=100, ignore_index=-100, reduction)``, its
    arguments in its order (``k`` changes nothing here, as for :func:`~sparse_tutorial.projections.entmax15`)."""

    def __init__(self, k: int | None = 100, ignore_index: int = -100, reduction: str = "mean") -> None:
        _check_k(k)
        super().__init__(entmax15_loss, ignore_index, reduction)
        self.k = k


class EntmaxBisectLoss(ReducedLoss):
    """:func:`entmax_bisect_loss` as a module: ``entmax.EntmaxBisectLoss(alpha=1.5, n_iter=50, ignore_index=-100,
    reduction)``, its arguments in its order."""

    def __init__(self, alpha: float = 1.5, n_iter: int = 50, ignore_index: int = -100,
                 reduction: str = "mean") -> None:
        super().__init__(functools.partial(entmax_bisect_loss, alpha=alpha, n_iter=n_iter), ignore_index, reduction)
        self.alpha, self.n_iter = alpha, n_iter


def binary_sparsemax_loss(margin: Tensor) -> Tensor:
    """Closed form of the two-class sparsemax loss as a function of the margin ``t = z_gold − z_other``.

    ``0`` for t ≥ 1, ``(1 − t)²/4`` for −1 < t < 1, ``−t`` for t ≤ −1; equals ``modified_huber_loss(t) / 4``.
    """
    return torch.where(margin <= -1, -margin, (1 - margin).clamp_min(0).square() / 4)


def modified_huber_loss(margin: Tensor) -> Tensor:
    """The modified Huber classification loss (Zhang 2004): ``max(0, 1 − t)²`` for t ≥ −1, else ``−4t``."""
    return torch.where(margin >= -1, (1 - margin).clamp_min(0).square(), -4 * margin)
