"""α-entmax for any α ≥ 1 (Peters et al. 2019), differentiable in the scores and in α (Correia et al. 2019).

Chapter 7 (sparsegen and entmax) explains it: α-entmax is the family that joins softmax (α = 1),
1.5-entmax and sparsemax (α = 2); larger α gives sparser weights. Along ``dim``::

    p_j = [(α − 1) z_j − τ]_+^{1/(α−1)},   τ such that Σ_j p_j = 1.

* :func:`alpha_entmax` — the function; ``alpha`` is a number, or a tensor with one α per slice (broadcast
  to ``scores.shape`` with ``dim`` of size 1), e.g. one learnable α per attention head.
* :class:`AlphaEntmax` — its ``nn.Module`` twin; ``learnable=True`` makes α a parameter,
  ``α = 1 + softplus(θ)``: always > 1, smooth, and linear (not exponential) in θ far from 1.

Exact where a closed form exists: a number α of 1, 1.5 or 2 calls the library's own
:func:`~sparse_tutorial.projections.softmax`, :func:`~sparse_tutorial.projections.entmax15` or
:func:`~sparse_tutorial.projections.sparsemax`. Any other α (and every tensor α) is found by bisection on
τ, written ``τ = u − 1`` after shifting the row maximum to 0: ``Σ p ≥ 1`` at ``u = 0`` (the maximum alone
weighs 1) and ``Σ p ≤ 1`` at ``u = 1 − n^{−(α−1)}`` (no weight exceeds 1/n), so each step halves a bracket
of width ``W ≤ (α−1) log n``. An error δu in the threshold moves a weight by the relative amount
``δu / ((α−1) p^{α−1})``; after k steps ``δu ≤ W 2^{−k}``, so that is at most ``log(n) 2^{−k} / p^{α−1}``,
below the dtype's epsilon for the large weights once k is its mantissa bits + 1 + ⌈log₂ log n⌉: the
default ``n_iter`` (27 in float32, 56 in float64 for n = 100). The weights are then evaluated at the lower
end of the bracket (where ``Σ p ≥ 1``) and renormalised. They are computed as
``exp(log1p((α−1) z − u) / (α−1))``, which stays accurate as α → 1, where ``(·)^{1/(α−1)}`` of a number
near 1 loses digits (1e-5 in float32 at α = 1.001). A tensor α that equals 1 gives softmax on its slices.

Gradients, closed form. With ``s = p^{2−α}`` (zero off the support), the vector-Jacobian product w.r.t. the
scores is ``s ⊙ v − (s·v / Σs) s`` (Peters et al. 2019, §3). The derivative w.r.t. α (Correia et al. 2019,
Appendix) is ``∂p/∂α = (p − p̃)/(α−1)² − (p ⊙ log p − p̃ Σ_j p_j log p_j)/(α−1)`` with ``p̃ = s/Σs``; its
two terms grow like 1/(α−1) and cancel (as written, float32 is off by 0.2 at α = 1.001). Expanding
``s = p e^{−(α−1) log p}`` gives the same quantity without the cancellation::

    ∂p_i/∂α = (p_i / Σs) [F̄ − F_i + (α−1)(F_i H − F̄ log p_i)],

with ``F_i = (log p_i)² φ(−(α−1) log p_i)``, ``φ(x) = (eˣ − 1 − x)/x²``, ``F̄ = Σ p_j F_j`` and
``H = Σ p_j log p_j``; at α = 1 it is ``p_i (Σ p_j (log p_j)² − (log p_i)²)/2``, the derivative at softmax.

Conventions are those of :mod:`sparse_tutorial.projections`: masked ``-inf`` scores get exactly 0 and an
all-masked slice all zeros (and zero gradients); NaN or ``+inf`` scores raise ``ValueError``; float16 and
bfloat16 are computed in float32; ``dim`` may be any dimension.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Union

import torch
from torch import Tensor, nn

from sparse_tutorial._validation import values_readable
from sparse_tutorial.projections.backward_passes import _entmax_vjp
from sparse_tutorial.projections.dense import _masked_softmax, softmax
from sparse_tutorial.projections.score_rows import _as_rows, _from_rows, _validated_row_max
from sparse_tutorial.projections.sparse import entmax15, sparsemax

Alpha = Union[float, Tensor]
"""α as :func:`alpha_entmax` takes it: a number ≥ 1, or a floating tensor of them broadcastable to the rows."""

_CLOSED_FORMS = {1.0: softmax, 1.5: entmax15, 2.0: sparsemax}
"""The values of a number α that have an exact algorithm of their own."""


def _check_alpha_number(alpha: object) -> None:
    """Raise unless ``alpha`` is a finite number ≥ 1."""
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
        raise TypeError(f"alpha must be a number >= 1 or a floating-point tensor, got {type(alpha).__name__}")
    if not math.isfinite(alpha) or alpha < 1:
        raise ValueError(f"alpha must be a finite number >= 1 (1 is softmax, 2 sparsemax), got {alpha!r}")


def _alpha_rows(alpha: Tensor, scores: Tensor, dim: int, dtype: torch.dtype) -> Tensor:
    """The tensor ``alpha`` validated and laid out as one α per row of ``_as_rows(scores, dim)``: ``(rows, 1)``."""
    if not alpha.is_floating_point():
        raise TypeError(f"alpha must be a floating-point tensor, got dtype {alpha.dtype}")
    row_shape = list(scores.shape)
    row_shape[dim] = 1
    try:
        broadcast = torch.broadcast_shapes(alpha.shape, row_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != torch.Size(row_shape):
        raise ValueError(f"alpha of shape {tuple(alpha.shape)} does not broadcast to one value per slice of "
                         f"scores along dim {dim}, shape {tuple(row_shape)}")
    valid = (alpha >= 1) & alpha.isfinite()  # NaN fails the comparison too
    if values_readable(alpha):
        if not bool(valid.all()):
            problem = ("contains NaN" if bool(alpha.isnan().any()) else "contains +inf"
                       if bool(alpha.isposinf().any()) else f"has a value < 1 (min {alpha.min().item():g})")
            raise ValueError(f"alpha must be a finite number >= 1 (1 is softmax, 2 sparsemax) but {problem}")
    else:  # not readable here (values_readable): the slices of an invalid α come out NaN instead
        alpha = alpha.where(valid, torch.nan)
    return _as_rows(alpha.to(dtype).expand(row_shape), dim)


def _default_iterations(dtype: torch.dtype, length: int) -> int:
    """Bisection steps that put the weights within the dtype's precision (module docstring)."""
    mantissa_bits = round(-math.log2(torch.finfo(dtype).eps))
    return mantissa_bits + 1 + math.ceil(math.log2(max(math.log(length), 1.0)))


def _weights_at(scaled: Tensor, shift: Tensor, epsilon: Tensor) -> Tensor:
    """``[1 + (α−1) z − u]_+^{1/(α−1)}`` for ``scaled = (α−1) z: (rows, n)``, ``shift = u`` and ``epsilon = α − 1``
    (``(rows, 1)``), as ``exp(log1p(·)/(α−1))``: accurate for α near 1, and 0 where the bracket is ≤ 0."""
    return torch.exp(torch.log1p((scaled - shift).clamp_min(-1.0)) / epsilon)


def _entmax_by_bisection(z: Tensor, epsilon: Tensor, n_iter: int) -> Tensor:
    """α-entmax of the rows of ``z: (rows, n)`` (row max 0, or all ``-inf``) for ``epsilon = α − 1 > 0: (rows, 1)``.

    Bisection on ``u = τ + 1`` in ``[0, 1 − n^{−(α−1)}]``, keeping ``Σ p ≥ 1`` at the lower end, whose
    weights are returned renormalised (an all ``-inf`` row has no weight and gives zeros).
    """
    scaled = epsilon * z
    lower = torch.zeros_like(epsilon)
    width = -torch.expm1(-epsilon * math.log(z.shape[1]))
    for _ in range(n_iter):
        width = width / 2
        middle = lower + width
        lower = torch.where(_weights_at(scaled, middle, epsilon).sum(1, keepdim=True) >= 1, middle, lower)
    weights = _weights_at(scaled, lower, epsilon)
    return weights / weights.sum(1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)


def _exp_remainder(x: Tensor) -> Tensor:
    """``φ(x) = (eˣ − 1 − x)/x²`` for ``x ≥ 0``, with φ(0) = 1/2.

    The direct formula's relative rounding error is ``≈ 2ε/x`` (ε the dtype's epsilon); below
    ``x₀ = (5040 ε)^{1/6}``, where it would exceed the relative size ``x⁵/2520`` of the first omitted term, the
    Taylor series ``1/2 + x/6 + x²/24 + x³/120 + x⁴/720`` is used (both ≤ 1e-6 in float32, 1e-13 in float64).
    """
    small = x < (5040 * torch.finfo(x.dtype).eps) ** (1 / 6)
    series = 0.5 + x * (1 / 6 + x * (1 / 24 + x * (1 / 120 + x / 720)))
    safe = torch.where(small, 1.0, x)  # no 0/0 in the branch that where() discards (a NaN gradient otherwise)
    return torch.where(small, series, (torch.expm1(safe) - safe) / safe.square())


def _weights_derivative_wrt_alpha(weights: Tensor, log_weights: Tensor, slopes: Tensor, epsilon: Tensor) -> Tensor:
    """``∂p/∂α: (rows, n)`` by the cancellation-free form of the module docstring; 0 off the support.

    ``log_weights`` is ``log p`` on the support and 0 off it, ``slopes = p^{2−α}``, ``epsilon = α − 1: (rows, 1)``.
    """
    remainder = log_weights.square() * _exp_remainder(-epsilon * log_weights)
    mean_remainder = (weights * remainder).sum(1, keepdim=True)
    negative_entropy = (weights * log_weights).sum(1, keepdim=True)
    slope_total = slopes.sum(1, keepdim=True).clamp_min(torch.finfo(slopes.dtype).tiny)
    bracket = mean_remainder - remainder + epsilon * (remainder * negative_entropy - log_weights * mean_remainder)
    return weights / slope_total * bracket


class AlphaEntmaxFunction(torch.autograd.Function):
    """α-entmax of ``(rows, n)`` scores (row max 0, or all ``-inf``) for ``alpha: (rows, 1)``, with the closed-form
    gradients of the module docstring w.r.t. both. Differentiating twice (``create_graph=True``) works: the
    backward is made of differentiable operations on the saved weights and α. Static (a fixed number of
    bisection steps, no branch on the data), so ``torch.compile`` traces it and ``torch.func`` batches it."""

    generate_vmap_rule = True

    @staticmethod
    def forward(z: Tensor, alpha: Tensor, n_iter: int) -> Tensor:  # noqa: D102 - documented on the class
        epsilon = alpha - 1
        is_softmax = epsilon == 0
        weights = _entmax_by_bisection(z, epsilon.masked_fill(is_softmax, 1.0), n_iter)
        softmax_weights = _masked_softmax(z, torch.isneginf(z.amax(1, keepdim=True)), 1)
        return torch.where(is_softmax, softmax_weights, weights)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Tensor, Tensor, int], output: Tensor) -> None:  # noqa: D102
        ctx.save_for_backward(output, inputs[1])

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple[Tensor, Optional[Tensor], None]:  # noqa: D102
        weights, alpha = ctx.saved_tensors
        epsilon = alpha - 1
        support = weights > 0
        log_weights = torch.where(support, weights, 1.0).log()
        slopes = weights * torch.exp(-epsilon * log_weights)  # p^{2−α} on the support, 0 off it
        grad_scores = _entmax_vjp(slopes, grad_output)
        if not ctx.needs_input_grad[1]:
            return grad_scores, None, None
        derivative = _weights_derivative_wrt_alpha(weights, log_weights, slopes, epsilon)
        grad_alpha = (grad_output.masked_fill(~support, 0.0) * derivative).sum(1, keepdim=True)
        return grad_scores, grad_alpha, None


def alpha_entmax(scores: Tensor, alpha: Alpha = 1.5, dim: int = -1, n_iter: Optional[int] = None) -> Tensor:
    """α-entmax (Peters et al. 2019): ``p_j = [(α−1) z_j − τ]_+^{1/(α−1)}`` with τ such that ``Σ p = 1``.

    α = 1 is softmax, α = 2 sparsemax; the larger α, the fewer non-zero weights.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        alpha: a number ≥ 1 (1, 1.5 and 2 are computed exactly by softmax, entmax15 and sparsemax), or a
            floating tensor of them broadcastable to ``scores.shape`` with ``dim`` of size 1, one α per
            slice; a tensor α that requires grad gets its gradient.
        dim: the dimension that is projected.
        n_iter: bisection steps; by default enough for the precision of the compute dtype (module docstring).
    Returns:
        weights of the shape and dtype of ``scores``.
    Raises:
        ValueError: α < 1, NaN or infinite, a tensor α that does not broadcast to the slices, ``n_iter < 1``,
            or scores that contain NaN or ``+inf``.
        TypeError: α neither a number nor a floating-point tensor, or scores not a floating-point tensor.
    """
    if n_iter is not None and (not isinstance(n_iter, int) or isinstance(n_iter, bool) or n_iter < 1):
        raise ValueError(f"n_iter must be a positive integer (bisection steps), got {n_iter!r}")
    if not isinstance(alpha, Tensor):
        _check_alpha_number(alpha)
        if alpha in _CLOSED_FORMS:
            return _CLOSED_FORMS[alpha](scores, dim)
    x, row_max, _ = _validated_row_max(scores, dim)
    alpha_rows = (_alpha_rows(alpha, scores, dim, x.dtype) if isinstance(alpha, Tensor)
                  else x.new_full((1, 1), float(alpha)))
    z = _as_rows(x - row_max, dim)
    steps = n_iter if n_iter is not None else _default_iterations(x.dtype, z.shape[1])
    weights = AlphaEntmaxFunction.apply(z, alpha_rows.expand(z.shape[0], 1), steps)
    return _from_rows(weights, x, dim).to(scores.dtype)


def _inverse_softplus(value: float) -> float:
    """θ with ``softplus(θ) = value > 0``: ``log(eᵛ − 1)``, written to stay finite for large and small values."""
    return value + math.log(-math.expm1(-value))


class AlphaEntmax(nn.Module):
    """Module twin of :func:`alpha_entmax`, with α fixed or learned.

    Args:
        alpha: α ≥ 1 (> 1 when learnable: α = 1 is the boundary that ``1 + softplus`` only approaches).
        dim: the dimension that is projected.
        learnable: make α a parameter, ``α = 1 + softplus(alpha_raw)`` with ``alpha_raw`` an ``nn.Parameter``
            started at the value that gives ``alpha``; α then stays ≥ 1 whatever the updates.
        n_iter: bisection steps, as in :func:`alpha_entmax`.
        alpha_shape: the shape of a learnable α, broadcast against the scores with ``dim`` of size 1:
            ``()`` one α for all; ``(num_heads, 1, 1)`` one per head of
            :class:`~sparse_tutorial.attention.MultiHeadAttention`'s ``(batch, heads, tgt_len, src_len)``
            scores (Correia et al. 2019).
    """

    def __init__(self, alpha: float = 1.5, dim: int = -1, learnable: bool = False,
                 n_iter: Optional[int] = None, alpha_shape: tuple[int, ...] = ()) -> None:
        super().__init__()
        _check_alpha_number(alpha)
        if learnable and alpha == 1:
            raise ValueError("alpha must be > 1 when learnable (α = 1 + softplus(θ) reaches 1 only as θ → −∞), got 1")
        if alpha_shape and not learnable:
            raise ValueError(f"alpha_shape={alpha_shape} is the shape of a learnable α; pass learnable=True")
        self.dim, self.learnable, self.n_iter = dim, learnable, n_iter
        if learnable:
            self.alpha_raw = nn.Parameter(torch.full(tuple(alpha_shape), _inverse_softplus(alpha - 1.0)))
        else:
            self.fixed_alpha = float(alpha)

    @property
    def alpha(self) -> Alpha:
        """α as used now, a number, or a tensor of shape ``alpha_shape`` (with its gradient) when learnable."""
        if self.learnable:
            return 1 + nn.functional.softplus(self.alpha_raw)
        return self.fixed_alpha

    def forward(self, scores: Tensor) -> Tensor:
        return alpha_entmax(scores, self.alpha, self.dim, self.n_iter)

    def extra_repr(self) -> str:
        if not self.learnable:
            return f"alpha={self.fixed_alpha:.4g}, dim={self.dim}, learnable=False"
        values = self.alpha.detach().flatten().tolist()
        shown = f"{values[0]:.4g}" if self.alpha_raw.dim() == 0 else "[" + ", ".join(f"{v:.4g}" for v in values) + "]"
        return f"alpha={shown}, dim={self.dim}, learnable=True"


# ------------------------------------------------------------------------- the entmax package's names
def entmax_bisect(X: Tensor, alpha: float | Tensor = 1.5, dim: int = -1, n_iter: int = 50,
                  ensure_sum_one: bool = True) -> Tensor:
    """The ``entmax`` package's ``entmax_bisect``: :func:`alpha_entmax` with its signature and defaults
    (50 bisection steps; with ``ensure_sum_one`` each slice is divided by its sum at the end)."""
    weights = alpha_entmax(X, alpha, dim, n_iter)
    if not ensure_sum_one:
        return weights
    return weights / weights.sum(dim, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)


class EntmaxBisect(nn.Module):
    """The ``entmax`` package's ``EntmaxBisect(alpha, dim, n_iter)``: :func:`entmax_bisect` as a module
    (:class:`AlphaEntmax` learns α)."""

    def __init__(self, alpha: float | Tensor = 1.5, dim: int = -1, n_iter: int = 50) -> None:
        super().__init__()
        self.alpha, self.dim, self.n_iter = alpha, dim, n_iter

    def forward(self, X: Tensor) -> Tensor:
        return entmax_bisect(X, self.alpha, self.dim, self.n_iter)

