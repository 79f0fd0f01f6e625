"""Projections of attention scores onto the probability simplex: softmax and its sparse relatives.

Every function maps ``scores: (..., n, ...)`` to ``weights`` of the same shape whose slices along ``dim``
lie on the simplex (non-negative, summing to one). Chapter 5 (temperature, Gumbel) and chapter 6
(sparsemax, sparsegen, entmax-1.5) explain them; the appendix "How fast is sparse attention?" times them.
This module is the one to import them from: the functions, their ``nn.Module`` twins and
:func:`get_projection`.

* :func:`softmax`, :func:`softmax_with_temperature`, :func:`gumbel_softmax` — dense (Gumbel ``hard=True``
  is one-hot forward with a straight-through gradient).
* :func:`sparsemax` — the Euclidean projection onto the simplex (Martins & Astudillo 2016, eq. 2),
  ``p = max(z − τ, 0)``, with the closed-form Jacobian-vector product ``v ↦ s ⊙ (v − mean_S v)``.
* :func:`sparsegen_lin` — sparsegen-lin (Laha et al. 2018): ``sparsemax(z / (1 − λ))``, λ < 1.
* :func:`entmax15` — exact 1.5-entmax (Peters et al. 2019): ``p = max(z/2 − τ, 0)²``.

Conventions shared by all of them:

* masked positions are passed as ``-inf`` scores and get exactly zero weight; a slice that is entirely
  ``-inf`` (nothing to attend to) gets all zeros and a zero gradient, never NaN;
* NaN or ``+inf`` in the scores raises ``ValueError``; finite huge scores (``±3e38``) are fine because
  every computation first subtracts the row maximum;
* float16/bfloat16 scores are computed in float32 and returned in their own dtype;
* ``dim`` may be any dimension; batch shapes and non-contiguous inputs need no special care.

Algorithms (timed in the appendix). Neither sparse projection sorts: each finds its threshold τ exactly by
a search that starts from a lower bound and runs only on the few entries that can be in the support, and
the backward passes use the closed-form Jacobians. No Python loop runs over batch elements. The code of the
sparse projections lives in modules of their own, one idea each:

* :mod:`sparse_tutorial.kernel_dispatch` — which code runs: on the CPU the compiled C++ kernel of
  :mod:`sparse_tutorial.fused` when a compiler is at hand (``with fused.eager():`` turns it off), else the
  eager PyTorch code of the two modules below;
* :mod:`sparse_tutorial.sparsemax_eager` and :mod:`sparse_tutorial.entmax_eager` — the threshold searches
  and their backward passes, as autograd Functions;
* :mod:`sparse_tutorial.threshold_candidates` — what both searches share: a lower bound on τ from block
  maxima, and the candidates above it;
* :mod:`sparse_tutorial.score_rows` — validation, the row maximum and the ``(rows, n)`` layout that every
  projection starts from.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable, Optional

import torch
from torch import Tensor, nn

from sparse_tutorial._validation import check_positive
from sparse_tutorial.entmax_eager import Entmax15Function
from sparse_tutorial.kernel_dispatch import KernelFunction, _project, _use_kernel
from sparse_tutorial.score_rows import _as_rows, _from_rows, _validated_row_max
from sparse_tutorial.sparsemax_eager import SparsemaxFunction

Projection = Callable[..., Tensor]
"""A projection as the attention modules use it, ``fn(scores, dim=-1) -> weights``."""


def _masked_softmax(z: Tensor, empty: Tensor, dim: int) -> Tensor:
    """``torch.softmax`` of scores ``z`` where all-masked slices give zeros and a zero gradient.

    ``torch.softmax`` of an all ``-inf`` slice is NaN forward and backward, so such slices are replaced by
    zeros before and after it (``masked_fill`` passes no gradient to the filled entries).
    """
    if not empty.any():
        return torch.softmax(z, dim)
    return torch.softmax(z.masked_fill(empty, 0.0), dim).masked_fill(empty, 0.0)


def softmax(scores: Tensor, dim: int = -1) -> Tensor:
    """Masked-safe softmax: ``exp(z) / Σ exp(z)`` along ``dim``.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        dim: the dimension that is normalised.
    Returns:
        weights of the shape and dtype of ``scores``; an all ``-inf`` slice gives zeros (not NaN).
    """
    x, _, empty = _validated_row_max(scores, dim)
    # torch.softmax subtracts the row max itself, so huge finite scores are safe without a shift here.
    return _masked_softmax(x, empty, dim).to(scores.dtype)


def softmax_with_temperature(scores: Tensor, temperature: float = 1.0, dim: int = -1) -> Tensor:
    """``softmax(scores / T)`` (Zhang et al. 2019, eq. 17): T < 1 sharpens, T > 1 flattens.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        temperature: T > 0.
        dim: the dimension that is normalised.
    """
    check_positive(temperature, "temperature")
    x, row_max, empty = _validated_row_max(scores, dim)
    z = x - row_max
    return _masked_softmax(z / temperature, empty, dim).to(scores.dtype)


def gumbel_softmax(scores: Tensor, temperature: float = 1.0, hard: bool = False, dim: int = -1,
                   generator: Optional[torch.Generator] = None) -> Tensor:
    """Gumbel-softmax (Jang et al. 2017; Zhang et al. 2019, eq. 18): ``softmax((z + g) / T)``, g ~ Gumbel(0, 1).

    The scores play the role of logits. With ``hard=True`` the forward value is the one-hot vector of the
    sampled position, ``argmax(z + g)``, and the gradient is the soft sample's (straight-through).
    Masked (``-inf``) positions are never sampled; an all-masked slice gives zeros.

    Args:
        scores: ``(..., n, ...)``.
        temperature: T > 0.
        hard: return one-hot samples with a straight-through gradient.
        dim: the dimension that is normalised.
        generator: a ``torch.Generator`` for reproducible noise.
    """
    check_positive(temperature, "temperature")
    x, row_max, empty = _validated_row_max(scores, dim)
    z = x - row_max
    exponential = torch.empty(z.shape, dtype=z.dtype, device=z.device).exponential_(generator=generator)
    perturbed = z - exponential.clamp_min(torch.finfo(z.dtype).tiny).log()
    soft = _masked_softmax(perturbed / temperature, empty, dim)
    if not hard:
        return soft.to(scores.dtype)
    one_hot = torch.zeros_like(soft).scatter_(dim, perturbed.detach().argmax(dim, keepdim=True), 1.0)
    return (one_hot.masked_fill(empty, 0.0) - soft.detach() + soft).to(scores.dtype)


def sparsemax(scores: Tensor, dim: int = -1) -> Tensor:
    """Sparsemax (Martins & Astudillo 2016, eq. 2): ``argmin_{p ∈ Δ} ‖p − z‖²`` along ``dim``.

    The solution is ``p_j = max(z_j − τ, 0)`` with the threshold τ chosen so that ``Σ p = 1``; scores
    more than 1 below the maximum always get exactly zero weight. On the CPU the compiled kernel of
    :mod:`sparse_tutorial.fused` computes it when it is available, else (and on other devices) the eager
    code of :mod:`sparse_tutorial.sparsemax_eager`; both are exact, and agree to float rounding.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        dim: the dimension that is projected.
    Returns:
        weights of the shape and dtype of ``scores``.
    """
    return _project(scores, dim, "sparsemax", SparsemaxFunction)


def sparsegen_lin(scores: Tensor, lam: float = 0.0, dim: int = -1) -> Tensor:
    """Sparsegen-lin (Laha et al. 2018): ``sparsemax(z / (1 − λ))``; λ → 1 sparser, λ < 0 denser, λ = 0 sparsemax.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        lam: λ < 1.
        dim: the dimension that is projected.
    """
    _check_lam(lam)
    x, row_max, _ = _validated_row_max(scores, dim)
    # Shift before scaling so that huge scores cannot overflow; the scaled rows then have maximum 0.
    scaled = _as_rows((x - row_max) / (1.0 - lam), dim)
    if _use_kernel(scaled):
        weights = KernelFunction.apply(scaled, "sparsemax")
    else:
        weights = SparsemaxFunction.apply(scaled, scaled.new_zeros(scaled.shape[0], 1))
    return _from_rows(weights, x, dim).to(scores.dtype)


def _check_lam(lam: float) -> None:
    if not isinstance(lam, (int, float)) or isinstance(lam, bool) or not lam < 1:
        raise ValueError(f"lam must be a number < 1 (sparsegen-lin divides by 1 - lam), got {lam!r}")


def entmax15(scores: Tensor, dim: int = -1) -> Tensor:
    """Exact 1.5-entmax (Peters et al. 2019): ``p_j = max(z_j/2 − τ, 0)²`` with τ such that ``Σ p = 1``.

    Sparse like sparsemax, but smoother: weights fall off quadratically near the threshold. Computed by
    the compiled kernel on the CPU when it is available, like :func:`sparsemax`.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        dim: the dimension that is projected.
    """
    return _project(scores, dim, "entmax15", Entmax15Function)


class Softmax(nn.Module):
    """Module twin of :func:`softmax`."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, scores: Tensor) -> Tensor:
        return softmax(scores, self.dim)


class SoftmaxWithTemperature(nn.Module):
    """Module twin of :func:`softmax_with_temperature`."""

    def __init__(self, temperature: float = 1.0, dim: int = -1) -> None:
        super().__init__()
        check_positive(temperature, "temperature")
        self.temperature, self.dim = temperature, dim

    def forward(self, scores: Tensor) -> Tensor:
        return softmax_with_temperature(scores, self.temperature, self.dim)

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}, dim={self.dim}"


class GumbelSoftmax(nn.Module):
    """Module twin of :func:`gumbel_softmax` (samples in training and evaluation alike)."""

    def __init__(self, temperature: float = 1.0, hard: bool = False, dim: int = -1,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__()
        check_positive(temperature, "temperature")
        self.temperature, self.hard, self.dim, self.generator = temperature, hard, dim, generator

    def forward(self, scores: Tensor) -> Tensor:
        return gumbel_softmax(scores, self.temperature, self.hard, self.dim, self.generator)

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}, hard={self.hard}, dim={self.dim}"


class Sparsemax(nn.Module):
    """Module twin of :func:`sparsemax`."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, scores: Tensor) -> Tensor:
        return sparsemax(scores, self.dim)


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
    """Module twin of :func:`entmax15`."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, scores: Tensor) -> Tensor:
        return entmax15(scores, self.dim)


PROJECTIONS: dict[str, Projection] = {
    "softmax": softmax,
    "sparsemax": sparsemax,
    "entmax15": entmax15,
    "sparsegen_lin": sparsegen_lin,
    "softmax_with_temperature": softmax_with_temperature,
    "gumbel_softmax": gumbel_softmax,
    "sparsegen": sparsegen_lin,
    "temperature": softmax_with_temperature,
    "gumbel": gumbel_softmax,
}
"""Name → projection function; the keyword arguments each accepts are those of its signature. Every
function is found by its own name; ``"sparsegen"``, ``"temperature"`` and ``"gumbel"`` are the short names
that stored run keys and chapters use. :mod:`sparse_tutorial.alpha_entmax` adds ``"alpha_entmax"`` (and
the ``entmax`` package's ``"entmax_bisect"``)."""

_KWARG_CHECKS: dict[str, Callable[[object], None]] = {
    "temperature": lambda value: check_positive(value, "temperature"),
    "lam": _check_lam,
}


def get_projection(name: str, **kwargs: object) -> Projection:
    """The projection called ``name`` with ``kwargs`` bound, as ``fn(scores, dim=-1) -> weights``.

    Example: ``get_projection("temperature", temperature=0.5)``, ``get_projection("sparsegen", lam=0.5)``,
    ``get_projection("gumbel", temperature=0.5, hard=True)``.

    Raises:
        ValueError: unknown ``name`` (the message lists the valid ones), keyword arguments that the
            projection does not take (named), or invalid values (e.g. ``temperature <= 0``).
    """
    if name not in PROJECTIONS:
        raise ValueError(f"unknown projection name {name!r}; valid names: {sorted(PROJECTIONS)}")
    function = PROJECTIONS[name]
    accepted = set(inspect.signature(function).parameters) - {"scores", "dim"}
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise ValueError(f"projection {name!r} does not take keyword argument(s) {unknown}; "
                         f"it takes {sorted(accepted) or 'none'}")
    for key, value in kwargs.items():
        if key in _KWARG_CHECKS:
            _KWARG_CHECKS[key](value)
    if not kwargs:
        return function
    return functools.partial(function, **kwargs)
