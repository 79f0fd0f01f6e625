"""The dense projections: softmax, softmax with a temperature and Gumbel-softmax (chapter 5), each with
its ``nn.Module`` twin. Every weight is positive; an all-masked slice gets zeros and a zero gradient."""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn

from sparse_tutorial._validation import check_positive, values_readable
from sparse_tutorial.projections.score_rows import _validated_row_max


def _masked_softmax(z: Tensor, empty: Tensor, dim: int) -> Tensor:
    """``torch.softmax`` of scores ``z`` where all-masked slices give zeros and a zero gradient.

    ``torch.softmax`` of an all ``-inf`` slice is NaN forward and backward, so such slices are replaced by
    zeros before and after it (``masked_fill`` passes no gradient to the filled entries). Where the values are
    readable, the common case of no such slice skips the two fills.
    """
    if values_readable(empty) and not empty.any():
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
    # empty_like, not empty: under vmap it is batched, so each sample gets its own noise
    exponential = torch.empty_like(z, memory_format=torch.contiguous_format).exponential_(generator=generator)
    perturbed = z - exponential.clamp_min(torch.finfo(z.dtype).tiny).log()
    soft = _masked_softmax(perturbed / temperature, empty, dim)
    if not hard:
        return soft.to(scores.dtype)
    one_hot = torch.zeros_like(soft).scatter_(dim, perturbed.detach().argmax(dim, keepdim=True), 1.0)
    return (one_hot.masked_fill(empty, 0.0) - soft.detach() + soft).to(scores.dtype)


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
