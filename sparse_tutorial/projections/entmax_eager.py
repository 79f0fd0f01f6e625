"""1.5-entmax in PyTorch (the "eager" code): an exact threshold search without sorting, and its backward.

It works like :mod:`sparse_tutorial.projections.sparsemax_eager` on the halved scores, ``p = max(z/2 − τ, 0)²``: from a
lower bound on τ (block maxima, then only the candidates above it, :mod:`sparse_tutorial.projections.threshold_candidates`)
each step takes the root of the quadratic ``Σ_S (z_j − τ)² = 1`` on the current support S, until the support
no longer changes; a sort-based threshold (Peters et al. 2019, Algorithm 2) is the fallback, never needed in
practice (:mod:`~sparse_tutorial.projections.by_sorting`). :class:`Entmax15Function` wraps it with the closed-form backward of Peters et al. (2019).

:func:`~sparse_tutorial.projections.entmax15` runs this code where the compiled kernel does not
(:mod:`sparse_tutorial.projections.kernel_dispatch`).
"""
from __future__ import annotations

import torch
from torch import Tensor

from sparse_tutorial.projections.backward_passes import _entmax_vjp
from sparse_tutorial.projections.by_sorting import entmax15_threshold_by_sorting
from sparse_tutorial.projections.threshold_candidates import (_SLACK, _block_maxima, _compact_candidates,
                                                              _gather_candidates, _scatter_candidates)


_ENTMAX_ITERATIONS = 50
"""Cap on the root-finding steps of :func:`_entmax15_rows` before its sort-based fallback."""


def _entmax15_rows(z: Tensor, tau: Tensor) -> tuple[Tensor, Tensor]:
    """``(sqrt of the exact 1.5-entmax weights = max(z − τ, 0), τ)`` for the rows of halved scores ``z: (rows, k)``.

    ``f(τ) = Σ max(z − τ, 0)² − 1`` is convex and decreasing; ``tau: (rows, 1)`` is the start (−1 always is
    a lower bound). At the current τ with support S, the next τ is the smaller root of the quadratic
    ``Σ_S (z_j − τ)² = 1`` (exact if S is the final support), or a Newton step when that root does not
    exist. When a root step leaves every row's support size unchanged, each τ solves the equation on its
    own support: that is the exact threshold. Should the iteration not settle within
    ``_ENTMAX_ITERATIONS`` steps, the sort-based threshold finishes the job.
    """
    root, scratch = torch.empty_like(z), torch.empty_like(z)
    support_size, exact_step = None, None
    for _ in range(_ENTMAX_ITERATIONS):
        torch.sub(z, tau, out=root).relu_()
        new_support_size = torch.sign(root, out=scratch).sum(1, keepdim=True)
        linear = root.sum(1, keepdim=True)
        quadratic = torch.mul(root, root, out=scratch).sum(1, keepdim=True)
        discriminant = linear * linear - new_support_size * (quadratic - 1)
        nonempty = new_support_size > 0
        root_step = (linear - discriminant.clamp_min(0).sqrt()) / new_support_size.clamp_min(1)
        if support_size is not None and torch.equal(new_support_size, support_size) and bool(exact_step.all()):
            # τ is the root on its own support, but τ + step cancelled its low digits when the step was
            # large (from −1 to ≈ −1/n on a flat row); one more root step from here, where z − τ are the
            # weights themselves, restores them.
            tau = tau + torch.where(nonempty, root_step, 0.0)
            return torch.sub(z, tau, out=root).relu_(), tau
        support_size = new_support_size
        exact_step = (discriminant >= 0) | ~nonempty
        newton_step = (quadratic - 1) / (2 * linear).clamp_min(torch.finfo(z.dtype).tiny)
        tau = tau + torch.where(nonempty, torch.where(exact_step, root_step, newton_step), 0.0)
    empty = torch.isneginf(z.amax(1, keepdim=True))
    tau = entmax15_threshold_by_sorting(z)
    return (z.clamp_min(-2.0) - tau).clamp_min_(0.0).masked_fill_(empty, 0.0), tau


class Entmax15Function(torch.autograd.Function):
    """1.5-entmax of ``(rows, n)`` scores with the closed-form backward of Peters et al. (2019, Proposition 3).

    With ``g = sqrt(p)`` (zero off the support) the vector-Jacobian product is ``g ⊙ v − (Σ g ⊙ v / Σ g) g``.
    Differentiating twice (``create_graph=True``) computes ``g`` from the saved output, on the full rows.
    """

    @staticmethod
    def forward(ctx, x: Tensor, row_max: Tensor) -> Tensor:  # noqa: D102
        # The search runs on halved scores z/2 (p = max(z/2 − τ, 0)²), where −1 is a lower bound on τ.
        start = x.new_full((x.shape[0], 1), -1.0)
        lower_bound = _entmax15_rows(_block_maxima(x, row_max).div_(2), start)[1] - _SLACK
        candidates, index = _compact_candidates(x, row_max, 2 * lower_bound)
        sqrt_weights, _ = _entmax15_rows(candidates.div_(2), lower_bound)
        weights = _scatter_candidates(sqrt_weights.square(), index, x.shape)
        ctx.save_for_backward(sqrt_weights, index, weights)
        return weights

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None]:  # noqa: D102
        sqrt_weights, index, weights = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph: g = sqrt(p) of the saved output, so that p's own
            return _entmax_vjp(weights.sqrt(), grad_output), None  # dependence on x is differentiated
        grad = _entmax_vjp(sqrt_weights, _gather_candidates(grad_output, index))
        return _scatter_candidates(grad, index, grad_output.shape), None
