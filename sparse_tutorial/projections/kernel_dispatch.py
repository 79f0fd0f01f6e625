"""Which code computes sparsemax and 1.5-entmax: the compiled kernel, the eager searches, or sorting.

* Eagerly on the CPU, :func:`~sparse_tutorial.projections.sparsemax`,
  :func:`~sparse_tutorial.projections.sparsegen_lin` and :func:`~sparse_tutorial.projections.entmax15` run
  the exact searches of :mod:`sparse_tutorial.projections.sparsemax_eager` and
  :mod:`sparse_tutorial.projections.entmax_eager` as one compiled C++ function each
  (:mod:`sparse_tutorial.projections.fused`) when a compiler is at hand, and as that eager PyTorch code
  otherwise (or inside ``with fused.eager():``).
* On other devices, under ``torch.compile`` and inside ``torch.func`` transforms, where the code must be
  static (``values_readable`` of the library's input checks), they run the thresholds by sorting of
  :mod:`sparse_tutorial.projections.by_sorting`: no host–device sync, no graph break, batched by ``vmap``.

All three are exact and agree to float rounding.

* :class:`KernelFunction` — the kernel as an autograd Function, forward and backward;
* ``_use_kernel`` — whether the kernel computes a given tensor;
* ``_project`` — validates the scores and runs one projection by the code that fits.
"""
from __future__ import annotations

import torch
from torch import Tensor

from sparse_tutorial._validation import check_floating, check_row_max, compute_dtype, values_readable
from sparse_tutorial.projections import fused
from sparse_tutorial.projections.backward_passes import _entmax_vjp, _sparsemax_vjp
from sparse_tutorial.projections.score_rows import _as_rows, _from_rows, _validated_row_max


class KernelFunction(torch.autograd.Function):
    """Sparsemax or 1.5-entmax of contiguous ``(rows, n)`` CPU scores by the compiled kernel of
    :mod:`sparse_tutorial.projections.fused`, forward and backward (the kernel shifts by the row max itself).

    Differentiating twice (``create_graph=True``) runs the eager closed forms on the saved weights
    instead, so higher derivatives work as on the eager path.
    """

    @staticmethod
    def forward(ctx, x: Tensor, projection: str) -> Tensor:  # noqa: D102 - documented on the class
        weights, saved, invalid_rows = fused.KERNEL.forward(projection, x)
        if invalid_rows:
            check_row_max(x.amax(1, keepdim=True), "scores")  # names the problem (the kernel counted it)
        ctx.save_for_backward(weights, saved)
        ctx.projection = projection
        return weights

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None]:  # noqa: D102
        weights, saved = ctx.saved_tensors
        if not torch.is_grad_enabled():
            return fused.KERNEL.backward(ctx.projection, saved, grad_output.contiguous()), None
        if ctx.projection == "sparsemax":
            support = (weights > 0).to(weights.dtype)
            return _sparsemax_vjp(support, support.sum(1, keepdim=True), grad_output), None
        return _entmax_vjp(weights.sqrt(), grad_output), None


def _use_kernel(x: Tensor) -> bool:
    """Whether ``x`` is projected by the compiled kernel: eagerly on the CPU, when it is enabled and compiles."""
    return values_readable(x) and fused.KERNEL.ready()


def _project(scores: Tensor, dim: int, projection: str, eager: type[torch.autograd.Function],
             by_sorting: type[torch.autograd.Function]) -> Tensor:
    """``projection`` of ``scores`` along ``dim`` by the kernel, the ``eager`` autograd function, or the one
    ``by_sorting`` where the code must be static."""
    check_floating(scores, "scores", dim)
    x = compute_dtype(scores)
    if _use_kernel(x):  # the kernel validates (it counts rows with NaN or +inf) and shifts by the max
        weights = KernelFunction.apply(_as_rows(x, dim), projection)
    else:
        x, row_max, _ = _validated_row_max(scores, dim)
        if values_readable(x):
            weights = eager.apply(_as_rows(x, dim), _as_rows(row_max, dim))
        else:
            weights = by_sorting.apply(_as_rows(x - row_max, dim))
    return _from_rows(weights, x, dim).to(scores.dtype)
