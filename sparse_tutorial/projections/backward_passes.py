"""The closed-form backward passes of the sparse projections: vector-Jacobian products that touch only the
support.

* ``_sparsemax_vjp`` — sparsemax (Martins & Astudillo 2016, eq. 14): ``s ⊙ (v − mean_S v)``, ``s`` the
  support indicator;
* ``_entmax_vjp`` — α-entmax (Peters et al. 2019, Proposition 3): ``g ⊙ v − (Σ g ⊙ v / Σ g) g`` with
  ``g = p^(2−α)`` on the support (``sqrt(p)`` for 1.5-entmax);
* ``_off_support_zero`` — what both start from: the incoming gradient times a factor that is 0 off the
  support, exactly 0 there.

Every implementation of the projections uses them: the eager searches, the code by sorting, the compiled
kernel's double backward and α-entmax. They are static (no branch on the data) wherever the values are not
readable (``values_readable`` of the library's input checks), so ``torch.compile`` traces them and
``torch.func`` batches them.
"""
from __future__ import annotations

import torch
from torch import Tensor

from sparse_tutorial._validation import values_readable


def _off_support_zero(grad_output: Tensor, factor: Tensor) -> Tensor:
    """``v ⊙ factor`` for a ``factor ≥ 0`` that is 0 off the support, and exactly 0 there even where ``v`` is
    inf or NaN (a weight that is 0 passes no gradient; ``inf · 0`` would be NaN)."""
    product = grad_output * factor
    if values_readable(product) and bool(torch.isfinite(product).all()):  # torch.where is ~20x slower on the CPU
        return product
    return torch.where(factor > 0, product, 0.0)


def _sparsemax_vjp(support: Tensor, support_size: Tensor, grad_output: Tensor) -> Tensor:
    """``s ⊙ (v − mean_S v)`` for rows ``(rows, k)``: ``support`` the 0./1. indicator, ``support_size: (rows, 1)``."""
    grad = _off_support_zero(grad_output, support)
    mean = grad.sum(1, keepdim=True) / support_size.clamp_min(1)
    return grad - support * mean


def _entmax_vjp(slopes: Tensor, grad_output: Tensor) -> Tensor:
    """``g ⊙ v − (Σ g ⊙ v / Σ g) g`` for rows ``(rows, k)``: the vector-Jacobian product of α-entmax, whose
    ``g = p^(2−α)`` (zero off the support) is ``sqrt(p)`` for 1.5-entmax (Peters et al. 2019, Proposition 3)."""
    grad = _off_support_zero(grad_output, slopes)
    norm = slopes.sum(1, keepdim=True).clamp_min(torch.finfo(slopes.dtype).tiny)
    return grad - slopes * (grad.sum(1, keepdim=True) / norm)
