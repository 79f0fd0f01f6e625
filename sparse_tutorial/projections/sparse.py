"""The sparse projections with an exact threshold: sparsemax, sparsegen-lin and 1.5-entmax (chapters 6–7),
each with its ``nn.Module`` twin. :mod:`~sparse_tutorial.projections.kernel_dispatch` chooses the code that
finds the thresholds: the compiled kernel on the CPU, else the eager searches of
:mod:`~sparse_tutorial.projections.sparsemax_eager` and :mod:`~sparse_tutorial.projections.entmax_eager`, and
sorting (:mod:`~sparse_tutorial.projections.by_sorting`) on other devices, under ``torch.compile`` and inside
``torch.func`` transforms.

The functions and modules take the ``entmax`` package's arguments too: ``k``, its partial-sort size, is a
speed hint there; the thresholds here are exact without it, so it changes nothing (it is checked, as there,
to be a positive whole number or ``None``)."""
from __future__ import annotations

from torch import Tensor, nn

from sparse_tutorial.projections.by_sorting import Entmax15BySorting, SparsemaxBySorting
from sparse_tutorial.projections.entmax_eager import Entmax15Function
from sparse_tutorial.projections.kernel_dispatch import _project
from sparse_tutorial.projections.score_rows import _validated_row_max
from sparse_tutorial.projections.sparsemax_eager import SparsemaxFunction


def _check_k(k: int | None) -> None:
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        raise ValueError(f"k (the entmax package's partial-sort size) must be a whole number >= 1 or None, got {k!r}")


def sparsemax(scores: Tensor, dim: int = -1, k: int | None = None) -> Tensor:
    """Sparsemax (Martins & Astudillo 2016, eq. 2): ``argmin_{p ∈ Δ} ‖p − z‖²`` along ``dim``.

    The solution is ``p_j = max(z_j − τ, 0)`` with the threshold τ chosen so that ``Σ p = 1``; scores
    more than 1 below the maximum always get exactly zero weight. On the CPU the compiled kernel of
    :mod:`sparse_tutorial.projections.fused` computes it when it is available, else (and on other devices) the eager
    code of :mod:`sparse_tutorial.projections.sparsemax_eager`; both are exact, and agree to float rounding.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        dim: the dimension that is projected.
        k: accepted for the ``entmax`` package's signature; no effect (module docstring).
    Returns:
        weights of the shape and dtype of ``scores``.
    """
    _check_k(k)
    return _project(scores, dim, "sparsemax", SparsemaxFunction, SparsemaxBySorting)


def sparsegen_lin(scores: Tensor, lam: float = 0.0, dim: int = -1) -> Tensor:
    """Sparsegen-lin (Laha et al. 2018): ``sparsemax(z / (1 − λ))``; λ → 1 sparser, λ < 0 denser, λ = 0 sparsemax.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        lam: λ < 1.
        dim: the dimension that is projected.
    """
    _check_lam(lam)
    x, row_max, _ = _validated_row_max(scores, dim)
    # Shift before scaling so that huge scores cannot overflow; the scaled slices then have maximum 0.
    return sparsemax((x - row_max) / (1.0 - lam), dim).to(scores.dtype)


def _check_lam(lam: float) -> None:
    if not isinstance(lam, (int, float)) or isinstance(lam, bool) or not lam < 1:
        raise ValueError(f"lam must be a number < 1 (sparsegen-lin divides by 1 - lam), got {lam!r}")


def entmax15(scores: Tensor, dim: int = -1, k: int | None = None) -> Tensor:
    """Exact 1.5-entmax (Peters et al. 2019): ``p_j = max(z_j/2 − τ, 0)²`` with τ such that ``Σ p = 1``.

    Sparse like sparsemax, but smoother: weights fall off quadratically near the threshold. Computed by
    the compiled kernel on the CPU when it is available, like :func:`sparsemax`.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        dim: the dimension that is projected.
        k: accepted for the ``entmax`` package's signature; no effect (module docstring).
    """
    _check_k(k)
    return _project(scores, dim, "entmax15", Entmax15Function, Entmax15BySorting)


class Sparsemax(nn.Module):
    """Module twin of :func:`sparsemax` (``entmax.Sparsemax(dim, k)``)."""

    def __init__(self, dim: int = -1, k: int | None = None) -> None:
        super().__init__()
        _check_k(k)
        self.dim, self.k = dim, k

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - the entmax package's argument name
        return sparsemax(X, self.dim)


class SparsegenLin(nn.Module):
    """Module twin of :func:`sparsegen_lin`."""

    def __init__(self, lam: float = 0.0, dim: int = -1) -> None:
        super().__init__()
        _check_lam(lam)
        self.lam, self.dim = lam, dim

    def forward(self, scores: Tensor) -> Tensor:
        return sparsegen_lin(scores, self.lam, self.dim)

    def extra_repr(self) -> str:
        return f"lam={self.lam}, dim={self.dim}"


class Entmax15(nn.Module):
    """Module twin of :func:`entmax15` (``entmax.Entmax15(dim, k)``)."""

    def __init__(self, dim: int = -1, k: int | None = None) -> None:
        super().__init__()
        _check_k(k)
        self.dim, self.k = dim, k

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - the entmax package's argument name
        return entmax15(X, self.dim)
