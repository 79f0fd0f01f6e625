"""Projections of attention scores onto the probability simplex: softmax and its sparse relatives.

Every function maps ``scores: (..., n, ...)`` to ``weights`` of the same shape whose slices along ``dim``
lie on the simplex (non-negative, summing to one). Chapter 5 (temperature, Gumbel) and chapter 6
(sparsemax, sparsegen, entmax-1.5) explain them; the appendix "How fast is sparse attention?" times them.

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

Algorithms. Sparsemax finds τ by Newton's method on the piecewise-linear ``f(τ) = Σ max(z − τ, 0) − 1``
started at ``τ = max(z) − 1`` (a lower bound). Each step is Michelot's (1986) update
``τ ← (Σ_{z_j > τ} z_j − 1) / |{z_j > τ}|``; τ never decreases and the support only shrinks, so the
iteration stops, after a handful of steps in practice, when the support no longer changes — and then τ is
*exactly* the sort-based threshold. Entmax-1.5 uses the sort-based exact threshold of Peters et al.
(Algorithm 2 of their paper). No Python loop runs over batch elements.
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable, Optional

import torch
from torch import Tensor, nn

from sparse_tutorial._validation import check_floating, check_positive, check_row_max, compute_dtype

Projection = Callable[..., Tensor]
"""A projection as the attention modules use it: ``fn(scores, dim=-1) -> weights``."""


def _shift_by_row_max(scores: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """Validate ``scores`` and subtract each slice's maximum.

    Returns ``(z, empty)``: ``z`` has the shape of ``scores``, is computed in float32 for half inputs,
    has maximum 0 along ``dim`` (masked ``-inf`` stays ``-inf``); ``empty`` (size 1 along ``dim``) marks
    slices with no finite score. The maximum is detached: every projection here is invariant to adding a
    constant, so no gradient flows through it.
    """
    check_floating(scores, "scores")
    x = compute_dtype(scores)
    row_max = x.detach().amax(dim, keepdim=True)
    check_row_max(row_max, "scores")
    empty = torch.isneginf(row_max)
    return x - row_max.masked_fill(empty, 0.0), empty


def _masked_softmax(z: Tensor, empty: Tensor, dim: int) -> Tensor:
    """``torch.softmax`` of shifted scores where all-masked slices give zeros and a zero gradient.

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
    z, empty = _shift_by_row_max(scores, dim)
    return _masked_softmax(z, empty, dim).to(scores.dtype)


def softmax_with_temperature(scores: Tensor, temperature: float = 1.0, dim: int = -1) -> Tensor:
    """``softmax(scores / T)`` (Zhang et al. 2019, eq. 17): T < 1 sharpens, T > 1 flattens.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        temperature: T > 0.
        dim: the dimension that is normalised.
    """
    check_positive(temperature, "temperature")
    z, empty = _shift_by_row_max(scores, dim)
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
    z, empty = _shift_by_row_max(scores, dim)
    exponential = torch.empty(z.shape, dtype=z.dtype, device=z.device).exponential_(generator=generator)
    perturbed = z - exponential.clamp_min(torch.finfo(z.dtype).tiny).log()
    soft = _masked_softmax(perturbed / temperature, empty, dim)
    if not hard:
        return soft.to(scores.dtype)
    one_hot = torch.zeros_like(soft).scatter_(dim, perturbed.detach().argmax(dim, keepdim=True), 1.0)
    return (one_hot.masked_fill(empty, 0.0) - soft.detach() + soft).to(scores.dtype)


def _sparsemax_forward(z: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """Exact sparsemax of ``z`` (row max 0, ``-inf`` allowed) → ``(weights, support_size)``.

    Newton/Michelot on τ from the lower bound τ = max − 1 = −1 (module docstring). ``weights`` at the
    last τ is kept: once the support size repeats, τ was computed from that very support and is exact.
    An all ``-inf`` slice has support size 0, τ stays −1 and its weights are 0.
    """
    tau = torch.full_like(z.narrow(dim, 0, 1), -1.0)
    support_size = None
    while True:
        weights = (z - tau).clamp_min_(0.0)
        new_support_size = (weights > 0).sum(dim, keepdim=True)
        if support_size is not None and torch.equal(new_support_size, support_size):
            return weights, support_size
        support_size = new_support_size
        excess_mass = weights.sum(dim, keepdim=True) - 1.0
        tau = torch.maximum(tau, tau + excess_mass / support_size)


class SparsemaxFunction(torch.autograd.Function):
    """Sparsemax with the closed-form backward of Martins & Astudillo (2016, eq. 14).

    ``J v = s ⊙ (v − (s·v)/|S| 1)`` where ``s`` is the support indicator: the Jacobian is a projection, so
    backward costs two passes, whatever the support.
    """

    @staticmethod
    def forward(ctx, z: Tensor, dim: int) -> Tensor:  # noqa: D102 - documented on the class
        weights, support_size = _sparsemax_forward(z, dim)
        ctx.dim = dim
        ctx.save_for_backward(weights, support_size)
        return weights

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None]:  # noqa: D102
        weights, support_size = ctx.saved_tensors
        support = weights > 0
        grad_on_support = torch.where(support, grad_output, 0.0)
        mean = grad_on_support.sum(ctx.dim, keepdim=True) / support_size.clamp_min(1)
        return torch.where(support, grad_output - mean, 0.0), None


def sparsemax(scores: Tensor, dim: int = -1) -> Tensor:
    """Sparsemax (Martins & Astudillo 2016, eq. 2): ``argmin_{p ∈ Δ} ‖p − z‖²`` along ``dim``.

    The solution is ``p_j = max(z_j − τ, 0)`` with the threshold τ chosen so that ``Σ p = 1``; scores
    more than 1 below the maximum always get exactly zero weight.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        dim: the dimension that is projected.
    Returns:
        weights of the shape and dtype of ``scores``.
    """
    z, _ = _shift_by_row_max(scores, dim)
    return SparsemaxFunction.apply(z, dim).to(scores.dtype)


def sparsegen_lin(scores: Tensor, lam: float = 0.0, dim: int = -1) -> Tensor:
    """Sparsegen-lin (Laha et al. 2018): ``sparsemax(z / (1 − λ))``; λ → 1 sparser, λ < 0 denser, λ = 0 sparsemax.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        lam: λ < 1.
        dim: the dimension that is projected.
    """
    _check_lam(lam)
    z, _ = _shift_by_row_max(scores, dim)
    return SparsemaxFunction.apply(z / (1.0 - lam), dim).to(scores.dtype)


def _check_lam(lam: float) -> None:
    if not isinstance(lam, (int, float)) or isinstance(lam, bool) or not lam < 1:
        raise ValueError(f"lam must be a number < 1 (sparsegen-lin divides by 1 - lam), got {lam!r}")


def _entmax15_threshold(z: Tensor, dim: int) -> Tensor:
    """Exact τ of 1.5-entmax for ``z`` (already halved, row max 0, no ``-inf``), by sorting (Peters et al.).

    For the k largest entries the candidate τ_k solves ``Σ_{j≤k} (z_(j) − τ)² = 1``; the support size is
    the largest k with ``τ_k ≤ z_(k)``.
    """
    sorted_z = torch.sort(z, dim=dim, descending=True).values
    shape = [1] * z.dim()
    shape[dim] = z.size(dim)
    rho = torch.arange(1, z.size(dim) + 1, dtype=z.dtype, device=z.device).view(shape)
    mean = sorted_z.cumsum(dim) / rho
    mean_sq = (sorted_z * sorted_z).cumsum(dim) / rho
    delta = (1 - rho * (mean_sq - mean * mean)) / rho
    tau = mean - delta.clamp_min(0).sqrt()
    support_size = (tau <= sorted_z).sum(dim, keepdim=True)
    return tau.gather(dim, support_size - 1)


class Entmax15Function(torch.autograd.Function):
    """1.5-entmax with the closed-form backward of Peters et al. (2019, Proposition 3).

    With ``g = sqrt(p)`` (zero off the support) the vector-Jacobian product is ``g ⊙ v − (Σ g ⊙ v / Σ g) g``.
    """

    @staticmethod
    def forward(ctx, z: Tensor, dim: int) -> Tensor:  # noqa: D102
        # In z/2, entries more than 1 below the max are never in the support (τ ≥ max − 1), so clamping
        # them removes -inf without changing the result; all-masked slices become uniform and are zeroed.
        half_z = (z / 2).clamp_min_(-2.0)
        tau = _entmax15_threshold(half_z, dim)
        weights = (half_z - tau).clamp_min_(0.0).square_()
        weights.masked_fill_(torch.isneginf(z.amax(dim, keepdim=True)), 0.0)
        ctx.dim = dim
        ctx.save_for_backward(weights)
        return weights

    @staticmethod
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None]:  # noqa: D102
        (weights,) = ctx.saved_tensors
        sqrt_weights = weights.sqrt()
        grad = grad_output * sqrt_weights
        norm = sqrt_weights.sum(ctx.dim, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
        return grad - (grad.sum(ctx.dim, keepdim=True) / norm) * sqrt_weights, None


def entmax15(scores: Tensor, dim: int = -1) -> Tensor:
    """Exact 1.5-entmax (Peters et al. 2019): ``p_j = max(z_j/2 − τ, 0)²`` with τ such that ``Σ p = 1``.

    Sparse like sparsemax, but smoother: weights fall off quadratically near the threshold.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        dim: the dimension that is projected.
    """
    z, _ = _shift_by_row_max(scores, dim)
    return Entmax15Function.apply(z, dim).to(scores.dtype)


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
    "sparsegen": sparsegen_lin,
    "entmax15": entmax15,
    "temperature": softmax_with_temperature,
    "gumbel": gumbel_softmax,
}
"""Name → projection function; the keyword arguments each accepts are those of its signature."""

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
