"""Input checks shared by the projections, losses, regularizers, metrics, scores, attention and coverage.

Every check raises an error that names the offending argument, so a wrong call is fixed from the message
alone; every one takes the tensor first and its name second. Nothing here is part of the public API.

Checks of shapes and dtypes cost nothing and run everywhere. Checks of *values* (NaN or ``+inf`` scores, an
α below 1) run only where reading a value is free, :func:`values_readable`: eagerly on the CPU. On a GPU
reading one waits for the device (a host–device sync), under ``torch.compile`` it breaks the graph, and
inside ``torch.func`` transforms (``vmap``, ``jacrev``) it is impossible; there the code paths are static
and a bad value propagates instead: the slice it is in comes out NaN, as with ``torch.softmax``. It is never
a plausible wrong number.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor

LOW_PRECISION = (torch.float16, torch.bfloat16)


def values_readable(tensor: Tensor) -> bool:
    """Whether code may branch on ``tensor``'s values, or raise on them, at no cost: eagerly on the CPU, outside
    ``torch.compile`` and ``torch.func`` transforms (module docstring)."""
    # cheapest test first; under torch.compile is_compiling() answers before the functorch query is reached
    return tensor.is_cpu and not torch.compiler.is_compiling() and not torch._C._are_functorch_transforms_active()


def check_floating(tensor: Tensor, name: str, dim: Optional[int] = None) -> None:
    """Raise unless ``tensor`` is a floating-point tensor with at least one dimension.

    With ``dim`` (the dimension that is normalised or reduced) also raise if that dimension has size 0: there
    is no distribution over zero entries. Other dimensions may be empty (an empty batch is fine).
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if not tensor.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {tensor.dtype}")
    if tensor.dim() == 0:
        raise ValueError(f"{name} must have at least one dimension, got a 0-d tensor")
    if dim is not None and tensor.size(dim) == 0:  # size() names an out-of-range dim itself
        raise ValueError(f"{name} has an empty dimension {dim} (shape {tuple(tensor.shape)}): there is "
                         f"nothing to normalise along it")


def compute_dtype(tensor: Tensor) -> Tensor:
    """``tensor`` in the dtype the arithmetic runs in: float16/bfloat16 are upcast to float32."""
    return tensor.float() if tensor.dtype in LOW_PRECISION else tensor


def check_row_max(row_max: Tensor, name: str) -> None:
    """Raise if a row maximum reveals a NaN (max propagates NaN) or a +inf in the scores, where the values are
    readable (:func:`values_readable`; elsewhere such a row comes out NaN)."""
    if not values_readable(row_max) or bool((row_max < math.inf).all()):  # one check in the common case
        return
    if torch.isnan(row_max).any():
        raise ValueError(f"{name} contain NaN; a projection of NaN scores is undefined")
    if torch.isposinf(row_max).any():
        raise ValueError(f"{name} contain +inf; mask positions with -inf, never +inf")


def check_positive(value: float, name: str) -> None:
    """Raise unless ``value`` is a finite number > 0 (e.g. a temperature)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def check_shape(tensor: Tensor, name: str, *sizes: int | None, **named_sizes: int | None) -> None:
    """Raise a ``ValueError`` naming ``name`` unless ``tensor`` has exactly these dims (None = any size).

    Give the sizes by position or by dimension name, not both. By name the message shows the layout:
    ``check_shape(mask, "mask", batch=2, src_len=5)`` reads ``mask must have shape (batch, src_len) =
    (2, 5), got (2, 4)``; by position (``check_shape(mask, "mask", 2, 5)``) ``mask must have shape (2, 5),
    got (2, 4)``.
    """
    if sizes and named_sizes:
        raise TypeError("check_shape takes the sizes by position or by name, not both")
    expected = sizes or tuple(named_sizes.values())
    if tensor.dim() == len(expected) and all(
        size is None or size == actual for size, actual in zip(expected, tensor.shape)
    ):
        return
    shown = "(" + ", ".join("?" if size is None else str(size) for size in expected) + ")"
    layout = "(" + ", ".join(named_sizes) + ") = " if named_sizes else ""
    raise ValueError(f"{name} must have shape {layout}{shown}, got {tuple(tensor.shape)}")


def check_mask(mask: Tensor, name: str, *sizes: int | None, **named_sizes: int | None) -> None:
    """Raise unless ``mask`` is a boolean tensor (True = keep) of exactly these dims, given as for
    :func:`check_shape`."""
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a boolean tensor (True = keep), got "
                        f"{mask.dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    check_shape(mask, name, *sizes, **named_sizes)


def check_attention_weights(weights: Tensor) -> None:
    """Raise unless ``weights`` is a floating-point ``(batch, tgt_len, src_len)`` tensor: the attention of
    every target token over the source."""
    check_floating(weights, "weights")
    check_shape(weights, "weights", batch=None, tgt_len=None, src_len=None)


def check_query_keys(query: Tensor, keys: Tensor, query_dim: int | None = None, key_dim: int | None = None) -> None:
    """Raise unless ``query: (batch, query_dim)`` and ``keys: (batch, src_len, key_dim)`` (None = any size)."""
    check_shape(query, "query", batch=None, query_dim=query_dim)
    check_shape(keys, "keys", batch=query.shape[0], src_len=None, key_dim=key_dim)
