"""Fused sparsemax: the exact projection of :func:`~sparse_tutorial.projections.sparsemax`, compiled.

The eager :func:`~sparse_tutorial.projections.sparsemax` launches a few dozen PyTorch operations, each a
pass over the scores. On long rows that is cheap next to the arithmetic; on many short rows (attention
over 32 source words for a batch of 4,096 queries) the passes and their launches are the cost.
``torch.compile`` (TorchInductor) fuses the whole computation into one kernel that works row by row: a C++
loop nest on the CPU, a Triton kernel on a GPU. The appendix "How fast is sparse attention?" measures both.

The algorithm is written for fusion (it has no data-dependent shapes):

1. the row maximum (every score is shifted by it, so τ ∈ [−1, 0));
2. :data:`STEPS` Michelot steps ``τ ← τ + (Σ max(z − τ, 0) − 1) / |{z > τ}|`` from τ = −1, the same Newton
   iteration as the eager projection, kept monotone by a ``maximum``;
3. a test per row: is the support at the last τ the one that τ was computed from? Then τ is the exact
   threshold (the optimality condition, see :mod:`sparse_tutorial.projections`);
4. the rare rows that fail the test (flat rows with a large support need more steps) go through the same
   kernel again, from their current τ, until every row passes. The result is exact, never approximate.

The backward pass is the closed form ``J v = s ⊙ (v − mean_S v)``, compiled too. Rows longer than
:data:`LONG_ROW` go to the eager projection, whose block-maxima bound needs two passes where step 2 needs
several.

The first call for a device and dtype compiles the kernels, which takes seconds to tens of seconds (about
20 s on a 2-core CPU the first time; a few seconds once TorchInductor's disk cache has them), and says so
in a log message. When compilation is impossible (no C++ compiler, an unsupported platform) the eager
``sparsemax`` is used instead, with one warning: same results, eager speed.
"""
from __future__ import annotations

import logging
import warnings
from typing import Callable, Optional

import torch
from torch import Tensor

from sparse_tutorial._validation import check_floating, check_row_max, compute_dtype
from sparse_tutorial.projections import Sparsemax, _as_rows, _from_rows, sparsemax

STEPS = 4
"""Michelot steps per kernel call. From τ = −1 they settle 99.8 % of standard-normal rows of length 32,
99.2 % of length 128 and 92 % of length 1,024; the others take another call."""

LONG_ROW = 4096
"""Rows longer than this go to the eager :func:`~sparse_tutorial.projections.sparsemax`: there its
block-maxima bound leaves a handful of candidates after two passes, where the kernel's steps from τ = −1
each pass over the whole row."""

_LOG = logging.getLogger(__name__)


def _michelot_kernel(x: Tensor, tau: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Sparsemax steps for the rows of ``x: (rows, n)`` from the lower bounds ``tau: (rows, 1)``.

    Returns ``(weights (rows, n), row_max (rows, 1), tau, exact (rows, 1) bool)``. ``row_max`` is for input
    validation; where ``exact`` is False, ``weights`` are not final and the caller continues from ``tau``.
    An all ``-inf`` row (shifted by 0, support size 0) is exact with weights 0.
    """
    row_max = x.amax(1, keepdim=True)
    z = x - torch.where(torch.isneginf(row_max), 0.0, row_max)
    size = torch.zeros_like(tau)
    for _ in range(STEPS):
        size = (z > tau).to(z.dtype).sum(1, keepdim=True)
        tau = torch.maximum(tau, tau + ((z - tau).clamp_min(0).sum(1, keepdim=True) - 1) / size.clamp_min(1))
    exact = (z > tau).to(z.dtype).sum(1, keepdim=True) == size
    return (z - tau).clamp_min(0), row_max, tau, exact


def _backward_kernel(grad_output: Tensor, weights: Tensor) -> Tensor:
    """``s ⊙ (v − mean_S v)`` for the rows of ``grad_output: (rows, n)``, ``s`` the support of ``weights``."""
    support = (weights > 0).to(grad_output.dtype)
    grad = grad_output * support
    return grad - support * (grad.sum(1, keepdim=True) / support.sum(1, keepdim=True).clamp_min(1))


class _Kernels:
    """The compiled kernels, made on first use, or the reason they cannot be (then eager is used)."""

    def __init__(self) -> None:
        self.forward: Optional[Callable] = None
        self.backward: Optional[Callable] = None
        self.failure: Optional[str] = None
        self.compiled_for: set[tuple[str, torch.dtype]] = set()

    def ready(self, x: Tensor) -> bool:
        """Compile (once) and try the kernels on a tiny input like ``x``; False if that fails."""
        key = (x.device.type, x.dtype)
        if self.failure is not None:
            return False
        if key in self.compiled_for:
            return True
        _LOG.warning("sparse_tutorial.fused: compiling the sparsemax kernels for %s %s (once per process; "
                     "up to tens of seconds the first time, a few seconds from the disk cache)", *key)
        try:
            if self.forward is None:
                self.forward = torch.compile(_michelot_kernel, dynamic=True, fullgraph=True)
                self.backward = torch.compile(_backward_kernel, dynamic=True, fullgraph=True)
            probe = torch.tensor([[0.5, 0.0, -2.0], [0.1, 0.2, 0.3]], dtype=x.dtype, device=x.device)
            with torch.no_grad():  # the kernels always run without autograd (one compilation, not two)
                weights = self.forward(probe, probe.new_full((2, 1), -1.0))[0]
                self.backward(probe, weights)
        except Exception as error:  # noqa: BLE001 - any compiler failure means: use eager
            self.failure = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            warnings.warn(f"fused_sparsemax cannot compile ({self.failure}); using the eager sparsemax "
                          f"(same results, eager speed)", RuntimeWarning, stacklevel=3)
            return False
        self.compiled_for.add(key)
        return True


_KERNELS = _Kernels()


def _fused_forward(x: Tensor) -> Tensor:
    """Exact sparsemax of the rows of ``x: (rows, n)`` with the compiled kernel (validation included)."""
    x = x.detach()
    weights, row_max, tau, exact = _KERNELS.forward(x, x.new_full((x.shape[0], 1), -1.0))
    check_row_max(row_max, "scores")
    while not bool(exact.all()):
        rows = (~exact).squeeze(1).nonzero().squeeze(1).repeat(2)  # ≥ 2 rows: no recompile for 1 row
        weights_rows, _, tau_rows, exact_rows = _KERNELS.forward(x[rows], tau[rows])
        weights[rows], tau[rows], exact[rows] = weights_rows, tau_rows, exact_rows
    return weights


class FusedSparsemaxFunction(torch.autograd.Function):
    """Sparsemax of ``(rows, n)`` scores by the compiled kernels, forward and backward."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:  # noqa: D102 - documented on the class
        weights = _fused_forward(x)  # autograd.Function runs forward without grad
        ctx.save_for_backward(weights)
        return weights

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> Tensor:  # noqa: D102
        (weights,) = ctx.saved_tensors
        with torch.no_grad():
            return _KERNELS.backward(grad_output.detach().contiguous(), weights.detach())


def fused_sparsemax(scores: Tensor, dim: int = -1) -> Tensor:
    """Sparsemax by compiled kernels: the exact projection of :func:`~sparse_tutorial.projections.sparsemax`.

    Faster on short rows; rows longer than :data:`LONG_ROW` entries are projected by the eager function
    itself, which is faster there. Use it wherever the eager one is used, e.g.
    ``Attention(score, projection=fused_sparsemax)``. Results equal the eager ones up to float rounding
    (both are exact; they sum in different orders).

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        dim: the dimension that is projected.
    Returns:
        weights of the shape and dtype of ``scores``.
    """
    check_floating(scores, "scores", dim)
    x = _as_rows(compute_dtype(scores), dim)
    # Eager for long rows (faster), and for tiny inputs (no recompilation for a size of 0 or 1).
    if min(x.shape) < 2 or x.shape[1] > LONG_ROW or not _KERNELS.ready(x):
        return sparsemax(scores, dim)
    weights = FusedSparsemaxFunction.apply(x)
    return _from_rows(weights, scores, dim).to(scores.dtype)


class FusedSparsemax(Sparsemax):
    """Module twin of :func:`fused_sparsemax`: a :class:`~sparse_tutorial.projections.Sparsemax` on the kernels."""

    def forward(self, scores: Tensor) -> Tensor:
        return fused_sparsemax(scores, self.dim)
