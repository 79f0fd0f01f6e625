"""Sparsemax and 1.5-entmax by sorting: the code that runs where a projection must be static.

The threshold searches of :mod:`~sparse_tutorial.projections.sparsemax_eager` and
:mod:`~sparse_tutorial.projections.entmax_eager` loop until the support stops changing: a test of the data at
every step. On the CPU that is free. On a GPU every test waits for the device (a host–device sync);
``torch.compile`` cannot trace a loop whose length depends on the data (a graph break); ``torch.func.vmap``
cannot batch it at all. So on every device but the CPU, under ``torch.compile`` and inside ``torch.func``
transforms (``values_readable`` of the library's input checks says which), the thresholds are found by
sorting instead: a fixed sequence of tensor operations, O(n log n) per row, that gives the same exact τ (to
float rounding).

* sparsemax (Martins & Astudillo 2016, Algorithm 1): with the scores sorted, ``z_(1) ≥ z_(2) ≥ …``, the
  support is the ``k`` largest for the largest ``k`` with ``1 + k z_(k) > Σ_{j≤k} z_(j)``, and
  ``τ = (Σ_{j≤k} z_(j) − 1) / k``;
* 1.5-entmax (Peters et al. 2019, Algorithm 2), on the halved scores: the candidate ``τ_k`` solves
  ``Σ_{j≤k} (z_(j) − τ)² = 1``, and the support size is the largest ``k`` with ``τ_k ≤ z_(k)``.

Every row is first shifted so that its maximum is 0; then τ ≥ −1 (the maximum alone weighs 1 at τ = −1),
so an entry at or below −1 never has weight and the scores are clamped at −2 before sorting: masked
``−∞`` entries leave the arithmetic without producing NaN. A row with no finite score gets zeros; a row
with a NaN or ``+inf`` score (which only the eager CPU code can afford to look for and refuse) comes out NaN.

The autograd Functions share the eager code's closed-form backward passes (which branch on the values only
where they are readable) and are ready for ``torch.func`` (``setup_context`` and ``generate_vmap_rule``).
"""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sparse_tutorial.projections.backward_passes import _entmax_vjp, _sparsemax_vjp

_FLOOR = -2.0
"""Scores (row max 0; halved for 1.5-entmax) are clamped here: below −1 they never have weight."""


def _sorted_descending(z: Tensor) -> tuple[Tensor, Tensor]:
    """``z: (rows, n)`` clamped at :data:`_FLOOR`, and the same sorted in descending order along each row."""
    clamped = z.clamp_min(_FLOOR)
    return clamped, clamped.sort(dim=1, descending=True).values


def _ranks(z: Tensor) -> Tensor:
    """``1, 2, …, n`` in the dtype and on the device of ``z: (rows, n)``."""
    return torch.arange(1, z.shape[1] + 1, dtype=z.dtype, device=z.device)


def sparsemax_threshold_by_sorting(z: Tensor) -> Tensor:
    """The exact sparsemax τ of each row of ``z: (rows, n)`` (row max 0, or all ``−∞``): ``(rows, 1)``."""
    _, ordered = _sorted_descending(z)
    cumulative = ordered.cumsum(1)
    # k = 1 always qualifies, except in a row with NaN, whose τ must come out NaN: hence the clamp
    support_size = (1 + _ranks(z) * ordered > cumulative).sum(1, keepdim=True).clamp_min(1)
    return (cumulative.gather(1, support_size - 1) - 1) / support_size


def entmax15_threshold_by_sorting(z: Tensor) -> Tensor:
    """The exact 1.5-entmax τ of each row of the halved scores ``z: (rows, n)`` (row max 0, or all ``−∞``):
    ``(rows, 1)``, with ``p = max(z − τ, 0)²``."""
    _, ordered = _sorted_descending(z)
    ranks = _ranks(z)
    mean = ordered.cumsum(1) / ranks
    mean_square = (ordered * ordered).cumsum(1) / ranks
    delta = (1 - ranks * (mean_square - mean * mean)) / ranks
    candidates = mean - delta.clamp_min(0).sqrt()
    support_size = (candidates <= ordered).sum(1, keepdim=True).clamp_min(1)  # as for sparsemax
    return candidates.gather(1, support_size - 1)


def _without_empty_rows(weights: Tensor, z: Tensor) -> Tensor:
    """``weights: (rows, n)`` with zeros on the rows of ``z`` that have no finite score."""
    return weights.masked_fill(torch.isneginf(z.amax(1, keepdim=True)), 0.0)


class SparsemaxBySorting(torch.autograd.Function):
    """Sparsemax of ``(rows, n)`` scores (row max 0, or all ``−∞``) by sorting, with the closed-form backward
    ``s ⊙ (v − mean_S v)`` (``s`` the support indicator)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(z: Tensor) -> Tensor:  # noqa: D102 - documented on the class
        return _without_empty_rows((z.clamp_min(_FLOOR) - sparsemax_threshold_by_sorting(z)).clamp_min(0.0), z)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Tensor], output: Tensor) -> None:  # noqa: D102
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> Tensor:  # noqa: D102
        (weights,) = ctx.saved_tensors
        support = (weights > 0).to(weights.dtype)
        return _sparsemax_vjp(support, support.sum(1, keepdim=True), grad_output)


class Entmax15BySorting(torch.autograd.Function):
    """1.5-entmax of ``(rows, n)`` scores (row max 0, or all ``−∞``) by sorting, with the closed-form backward
    ``g ⊙ v − (Σ g ⊙ v / Σ g) g``, ``g = sqrt(p)`` (Peters et al. 2019, Proposition 3)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(z: Tensor) -> Tensor:  # noqa: D102 - documented on the class
        halved = z / 2
        sqrt_weights = (halved.clamp_min(_FLOOR) - entmax15_threshold_by_sorting(halved)).clamp_min(0.0)
        return _without_empty_rows(sqrt_weights.square(), z)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Tensor], output: Tensor) -> None:  # noqa: D102
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> Tensor:  # noqa: D102
        (weights,) = ctx.saved_tensors
        return _entmax_vjp(weights.sqrt(), grad_output)
