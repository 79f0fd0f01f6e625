"""Sparsemax in PyTorch (the "eager" code): an exact threshold search without sorting, and its backward.

The sparsemax threshold τ is the root of the piecewise-linear ``f(τ) = Σ max(z − τ, 0) − 1``. Started at a
lower bound from block maxima, and run only on the candidates above it
(:mod:`sparse_tutorial.projections.threshold_candidates`), Newton's method on ``f`` is Michelot's (1986) update
``τ ← (Σ_{z_j > τ} z_j − 1) / |{z_j > τ}|``: τ never decreases, the support only shrinks, and the iteration
stops — after a few steps — when the support no longer changes, which is the optimality condition, so τ is
*exactly* the sort-based threshold.
:class:`SparsemaxFunction` wraps it with the closed-form backward of Martins & Astudillo (2016).

:func:`~sparse_tutorial.projections.sparsemax` and :func:`~sparse_tutorial.projections.sparsegen_lin` run
this code where the compiled kernel does not (:mod:`sparse_tutorial.projections.kernel_dispatch`);
:mod:`sparse_tutorial.losses` uses the search for the sparsemax loss.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from sparse_tutorial.projections.backward_passes import _sparsemax_vjp
from sparse_tutorial.projections.threshold_candidates import (_SLACK, _block_maxima, _compact_candidates,
                                                              _gather_candidates, _scatter_candidates)


def _sparsemax_rows(z: Tensor, tau: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Exact sparsemax of the rows of ``z: (rows, k)`` (row max ≤ 0, or all ``-inf``) by Newton/Michelot.

    ``tau: (rows, 1)`` is a lower bound on the threshold to start from (−1 always is one). Returns
    ``(weights, support, support_size, tau)``: ``support`` is the 0./1. indicator of ``weights > 0`` and
    ``support_size: (rows, 1)``. The
    iteration ends when no row's support size changes; then each τ was computed from the very support it
    produces, which is the optimality condition (module docstring). An all ``-inf`` row has support size
    0, keeps its τ and gets weights 0.
    """
    finite = z.clamp_min(torch.finfo(z.dtype).min)  # -inf → a finite number, so that 0 · it is 0
    support, kept = torch.empty_like(z), torch.empty_like(z)
    support_size = None
    while True:
        new_support_size = torch.gt(z, tau, out=support).sum(1, keepdim=True)
        if support_size is not None and torch.equal(new_support_size, support_size):
            return (z - tau).relu_(), support, support_size, tau
        support_size = new_support_size
        # Σ_S z − 1, never Σ_S (z − τ) − 1: the latter cancels (τ ≈ −1/n on a flat row of n ~ 65,536
        # floats lost every digit); an all -inf row keeps its τ (0/0 is masked out).
        threshold = (torch.mul(finite, support, out=kept).sum(1, keepdim=True) - 1) / support_size
        tau = torch.where(support_size > 0, torch.maximum(tau, threshold), tau)


def _sparsemax_2d(x: Tensor, row_max: Tensor) -> tuple[Tensor, Tensor, Tensor, Optional[Tensor]]:
    """Sparsemax of the rows of ``x: (rows, n)`` given ``row_max: (rows, 1)`` (0 for all ``-inf`` rows).

    Returns ``(weights (rows, n), support, support_size, index)``, the last three on the candidates.
    """
    start = x.new_full((x.shape[0], 1), -1.0)
    lower_bound = _sparsemax_rows(_block_maxima(x, row_max), start)[3] - _SLACK
    candidates, index = _compact_candidates(x, row_max, lower_bound)
    weights, support, support_size, _ = _sparsemax_rows(candidates, lower_bound)
    return _scatter_candidates(weights, index, x.shape), support, support_size, index


class SparsemaxFunction(torch.autograd.Function):
    """Sparsemax of ``(rows, n)`` scores with the closed-form backward of Martins & Astudillo (2016, eq. 14).

    ``J v = s ⊙ (v − (s·v)/|S| 1)`` where ``s`` is the support indicator: only the candidates are touched,
    so backward costs a gather and a scatter beyond zero-filling the gradient.
    """

    @staticmethod
    def forward(ctx, x: Tensor, row_max: Tensor) -> Tensor:  # noqa: D102 - documented on the class
        weights, support, support_size, index = _sparsemax_2d(x, row_max)
        ctx.save_for_backward(support, support_size, index)
        return weights

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None]:  # noqa: D102
        support, support_size, index = ctx.saved_tensors
        grad = _sparsemax_vjp(support, support_size, _gather_candidates(grad_output, index))
        return _scatter_candidates(grad, index, grad_output.shape), None
