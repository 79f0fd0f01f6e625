"""What the eager sparsemax and 1.5-entmax share: the few entries of a row that can be in the support.

Both projections give ``max(z − τ, 0)`` (sparsemax of the scores, 1.5-entmax of the halved scores, then
squared) with a threshold τ that solves an equation over the entries above it. The threshold of any subset
of a row's entries is a lower bound on τ (it solves the same equation with fewer non-negative terms), so
one pass over block maxima (``_block_maxima``) gives a tight lower bound, and only the entries above it
can be in the support: a handful per row, which ``_compact_candidates`` packs into a small matrix for
long rows. The exact searches of :mod:`sparse_tutorial.projections.sparsemax_eager` and
:mod:`sparse_tutorial.projections.entmax_eager` then run on that matrix, starting from the bound, and their backward
passes touch only the candidates (``_gather_candidates``, ``_scatter_candidates``).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


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
