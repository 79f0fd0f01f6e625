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

Algorithms (timed in the appendix). Neither sparse projection sorts. Sparsemax's threshold τ is the root
of the piecewise-linear ``f(τ) = Σ max(z − τ, 0) − 1``; the threshold of any subset of a row's entries is a
lower bound on τ, so one pass over block maxima gives a tight lower bound, and only the entries above it
(a handful per row, packed into a small matrix for long rows) can be in the support. On them, Newton's
method started at the bound is Michelot's (1986) update ``τ ← (Σ_{z_j > τ} z_j − 1) / |{z_j > τ}|``:
τ never decreases, the support only shrinks, and the iteration stops — after a few steps — when the
support no longer changes, which is the optimality condition, so τ is *exactly* the sort-based
threshold. Entmax-1.5 works the same way with the root of a quadratic on the current support (and a
sort-based fallback that is never needed in practice). Backward passes use the closed-form Jacobians and
touch only the candidates. No Python loop runs over batch elements. On the CPU, sparsemax, sparsegen and
entmax-1.5 run the same searches as one compiled C++ kernel when a compiler is at hand
(:mod:`sparse_tutorial.fused`; ``with fused.eager():`` runs the code of this module instead).
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable, Optional

import torch
from torch import Tensor, nn

from sparse_tutorial import fused
from sparse_tutorial._validation import check_floating, check_positive, check_row_max, compute_dtype

Projection = Callable[..., Tensor]
"""A projection as the attention modules use it, ``fn(scores, dim=-1) -> weights``."""


def _validated_row_max(scores: Tensor, dim: int) -> tuple[Tensor, Tensor, Tensor]:
    """Validate ``scores`` and return ``(x, row_max, empty)``.

    ``x`` is ``scores`` in the compute dtype (float32 for half inputs); ``row_max`` (size 1 along ``dim``)
    is each slice's maximum, detached (every projection here is invariant to adding a constant, so no
    gradient flows through it), and 0 for the slices marked by ``empty`` that have no finite score, so
    that ``x − row_max`` stays ``-inf`` there instead of NaN.
    """
    check_floating(scores, "scores", dim)
    x = compute_dtype(scores)
    row_max = x.detach().amax(dim, keepdim=True)
    check_row_max(row_max, "scores")
    empty = torch.isneginf(row_max)
    return x, row_max.masked_fill_(empty, 0.0), empty


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


def _is_rows(tensor: Tensor, dim: int) -> bool:
    """Whether ``tensor`` already is a contiguous ``(rows, n)`` matrix along ``dim`` (nothing to reshape)."""
    return tensor.dim() == 2 and dim in (-1, 1) and tensor.is_contiguous()


def _as_rows(tensor: Tensor, dim: int) -> Tensor:
    """``tensor`` with ``dim`` moved last, as a contiguous ``(rows, n)`` matrix (a copy only if needed)."""
    if _is_rows(tensor, dim):
        return tensor
    return tensor.movedim(dim, -1).reshape(-1, tensor.size(dim)).contiguous()


def _from_rows(rows: Tensor, like: Tensor, dim: int) -> Tensor:
    """Inverse of :func:`_as_rows`: the ``(rows, n)`` matrix back in the shape of ``like``."""
    if like.dim() == 2 and dim in (-1, 1):
        return rows
    return rows.view(like.movedim(dim, -1).shape).movedim(-1, dim)


_BLOCKS = 32
"""Number of blocks whose maxima give the first lower bound on the threshold (see :func:`_block_maxima`)."""
_COMPACT_MIN_LENGTH = 256
"""Rows shorter than this are searched in place: compacting their candidates costs more than it saves."""
_SLACK = 1e-3
"""Safety margin subtracted from a computed lower bound on τ, far above its float rounding error."""


def _block_maxima(x: Tensor, row_max: Tensor) -> Tensor:
    """Maxima of consecutive blocks of each row of ``x: (rows, n)``, minus the row max: ``(rows, ≤ _BLOCKS)``.

    The threshold of any subset of a row's entries is a lower bound on the row's threshold (it solves the
    same equation with fewer non-negative terms), so the threshold of the block maxima — computed on a
    matrix 1/block the size — is a lower bound on τ, and a tight one when the support's entries lie in
    different blocks. Trailing entries that do not fill a block are left out (still a subset).
    """
    rows, n = x.shape
    block = max(2, n // _BLOCKS)
    usable = n - n % block
    return x[:, :usable].reshape(rows, usable // block, block).amax(2) - row_max


def _compact_candidates(x: Tensor, row_max: Tensor, lower_bound: Tensor) -> tuple[Tensor, Optional[Tensor]]:
    """The entries of the rows of ``x: (rows, n)`` above ``row_max + lower_bound``, minus the row max.

    Only they can be in the support (τ ≥ ``lower_bound``), so the exact search runs on a ``(rows, k)``
    matrix (k = most candidates in any row; padding ``-inf``) instead of the full rows. Returns
    ``(candidates, index)`` with the flat position in ``x`` of every candidate (padding → 0), or
    ``(x − row_max, None)`` when compaction would not pay (short rows, or k > n/2). The test
    ``x ≥ fl(max + bound)`` keeps every entry with ``x − max > bound`` whatever the rounding, because no
    float lies strictly between a number and its rounded value.
    """
    rows, n = x.shape
    if n < _COMPACT_MIN_LENGTH:
        return x - row_max, None
    flat_index = (x >= row_max + lower_bound).view(-1).nonzero().squeeze(1)
    row_of = torch.div(flat_index, n, rounding_mode="floor")
    per_row = torch.bincount(row_of, minlength=rows)
    k = int(per_row.max()) if rows else 0
    if 2 * k > n:
        return x - row_max, None
    column = torch.arange(flat_index.numel(), device=x.device) - (per_row.cumsum(0) - per_row)[row_of]
    candidates = torch.full((rows, k), -torch.inf, dtype=x.dtype, device=x.device)
    candidates[row_of, column] = x.view(-1)[flat_index] - row_max.view(-1)[row_of]
    index = torch.zeros((rows, k), dtype=torch.long, device=x.device)
    index[row_of, column] = flat_index
    return candidates, index


def _scatter_candidates(values: Tensor, index: Optional[Tensor], shape: torch.Size) -> Tensor:
    """Candidate values ``(rows, k)`` written into zeros of ``shape`` (padding adds 0 at position 0)."""
    if index is None:
        return values
    full = torch.zeros(shape.numel(), dtype=values.dtype, device=values.device)
    return full.scatter_add_(0, index.view(-1), values.view(-1)).view(shape)


def _gather_candidates(full: Tensor, index: Optional[Tensor]) -> Tensor:
    """The entries of ``full: (rows, n)`` at the candidates' positions, ``(rows, k)``."""
    if index is None:
        return full
    return full.reshape(-1).gather(0, index.view(-1)).view(index.shape)


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


def _off_support_zero(grad_output: Tensor, factor: Tensor) -> Tensor:
    """``v ⊙ factor`` for a ``factor ≥ 0`` that is 0 off the support, and exactly 0 there even where ``v`` is
    inf or NaN (a weight that is 0 passes no gradient; ``inf · 0`` would be NaN)."""
    product = grad_output * factor
    if bool(torch.isfinite(product).all()):  # the common case; torch.where is ~20x slower on the CPU
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


def sparsemax(scores: Tensor, dim: int = -1) -> Tensor:
    """Sparsemax (Martins & Astudillo 2016, eq. 2): ``argmin_{p ∈ Δ} ‖p − z‖²`` along ``dim``.

    The solution is ``p_j = max(z_j − τ, 0)`` with the threshold τ chosen so that ``Σ p = 1``; scores
    more than 1 below the maximum always get exactly zero weight. On the CPU the compiled kernel of
    :mod:`sparse_tutorial.fused` computes it when it is available, else (and on other devices) the eager
    code of this module; both are exact, and agree to float rounding.

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


_ENTMAX_ITERATIONS = 50
"""Cap on the root-finding steps of :func:`_entmax15_rows` before its sort-based fallback."""


def _entmax15_threshold_by_sorting(z: Tensor) -> Tensor:
    """Exact τ of 1.5-entmax for the rows of ``z: (rows, k)`` (halved, row max 0, no ``-inf``) by sorting.

    Peters et al. (2019, Algorithm 2): for the k largest entries the candidate τ_k solves
    ``Σ_{j≤k} (z_(j) − τ)² = 1``; the support size is the largest k with ``τ_k ≤ z_(k)``.
    """
    sorted_z = torch.sort(z, dim=1, descending=True).values
    rho = torch.arange(1, z.shape[1] + 1, dtype=z.dtype, device=z.device)
    mean = sorted_z.cumsum(1) / rho
    mean_sq = (sorted_z * sorted_z).cumsum(1) / rho
    delta = (1 - rho * (mean_sq - mean * mean)) / rho
    tau = mean - delta.clamp_min(0).sqrt()
    support_size = (tau <= sorted_z).sum(1, keepdim=True)
    return tau.gather(1, support_size - 1)


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
    finite_z = z.clamp_min(-2.0)
    tau = _entmax15_threshold_by_sorting(finite_z)
    return (finite_z - tau).clamp_min_(0.0).masked_fill_(empty, 0.0), tau


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


def entmax15(scores: Tensor, dim: int = -1) -> Tensor:
    """Exact 1.5-entmax (Peters et al. 2019): ``p_j = max(z_j/2 − τ, 0)²`` with τ such that ``Σ p = 1``.

    Sparse like sparsemax, but smoother: weights fall off quadratically near the threshold. Computed by
    the compiled kernel on the CPU when it is available, like :func:`sparsemax`.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        dim: the dimension that is projected.
    """
    return _project(scores, dim, "entmax15", Entmax15Function)


class KernelFunction(torch.autograd.Function):
    """Sparsemax or 1.5-entmax of contiguous ``(rows, n)`` CPU scores by the compiled kernel of
    :mod:`sparse_tutorial.fused`, forward and backward (the kernel shifts by the row max itself).

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
    """Whether ``x`` is projected by the compiled kernel: on the CPU, when it is enabled and compiles."""
    return x.device.type == "cpu" and fused.KERNEL.ready()


def _project(scores: Tensor, dim: int, projection: str, eager: type[torch.autograd.Function]) -> Tensor:
    """``projection`` of ``scores`` along ``dim`` by the kernel or by the ``eager`` autograd function."""
    check_floating(scores, "scores", dim)
    x = compute_dtype(scores)
    if _use_kernel(x):  # the kernel validates (it counts rows with NaN or +inf) and shifts by the max
        weights = KernelFunction.apply(_as_rows(x, dim), projection)
    else:
        x, row_max, _ = _validated_row_max(scores, dim)
        weights = eager.apply(_as_rows(x, dim), _as_rows(row_max, dim))
    return _from_rows(weights, x, dim).to(scores.dtype)


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
