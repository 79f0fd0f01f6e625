"""Scores as every projection of :mod:`sparse_tutorial.projections` takes them: validated, and as rows.

* ``_validated_row_max`` — the checks every projection makes (floating scores, no NaN or ``+inf``), the
  scores in the compute dtype (float32 for half inputs), and the row maximum that each projection
  subtracts first, so that finite huge scores cannot overflow;
* ``_as_rows`` and ``_from_rows`` — any ``dim`` of any shape as a contiguous ``(rows, n)`` matrix
  and back, the layout the threshold searches and the compiled kernel work on (a copy only when needed).

:func:`~sparse_tutorial.projections.alpha_entmax` uses them too.
"""
from __future__ import annotations

import torch
from torch import Tensor

from sparse_tutorial._validation import check_floating, check_row_max, compute_dtype


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
