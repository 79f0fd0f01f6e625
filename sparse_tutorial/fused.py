"""Fused sparsemax: the exact projection of :func:`~sparse_tutorial.projections.sparsemax`, as one C++ kernel.

The eager :func:`~sparse_tutorial.projections.sparsemax` launches a few dozen PyTorch operations, each a
pass over the scores. On long rows that is cheap next to the arithmetic; on many short rows (attention
over 32 source words for a batch of 4,096 queries) the passes and their launches are the cost. Here the
same algorithm (shift by the row max, Michelot steps from τ = −1 until the support stops changing, which
is the optimality condition) runs as one hand-written C++ kernel, ``fused_sparsemax.cpp`` beside this
file, and so does the closed-form backward pass ``J v = s ⊙ (v − mean_S v)``. Each row stops as soon as
it is exact.

Its one trick is the data layout. Every operation works on a vector of 16 floats (8 doubles):

* in the forward pass, rows up to 64 long are transposed in blocks of 16, one row per vector lane, so
  that the sums over a row run down the vectors lane by lane, with no sums across lanes, and 16 rows
  take their steps together; longer rows are cut into vectors of consecutive scores, whose lanes are
  added up once per step;
* the backward pass needs one sum per row, so it reads the rows in place, in vectors of consecutive
  scores.

The kernel is compiled with the system's C++ compiler (``$CXX``, else ``c++``, ``g++`` or ``clang++``)
the first time it is needed in a process, which takes about a second, and is called through
``ctypes``. On other devices than the CPU, and when no compiler works (the first failure is reported
in one warning), :func:`fused_sparsemax` is the eager ``sparsemax``: same results, eager speed. The
appendix "How fast is sparse attention?" measures both.
"""
from __future__ import annotations

import ctypes
import logging
import os
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Optional

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from sparse_tutorial._validation import check_floating, check_row_max, compute_dtype
from sparse_tutorial.projections import Sparsemax, _as_rows, _from_rows, sparsemax

KERNEL_SOURCE = Path(__file__).with_name("fused_sparsemax.cpp")
"""The C++ source of the forward and backward kernels."""

COMPILER_FLAGS = [["-O3", "-std=c++17", "-march=native", "-fopenmp"], ["-O3", "-std=c++17"]]
"""Tried in order: tuned for this CPU and multi-threaded, then plain (any C++17 compiler)."""

_LOG = logging.getLogger(__name__)
_KERNEL_DTYPES = {torch.float32: "float", torch.float64: "double"}
_POINTER, _INT64 = ctypes.c_void_p, ctypes.c_int64


def _compiler() -> Optional[str]:
    """The C++ compiler to use: ``$CXX`` if set, else the first of ``c++``, ``g++``, ``clang++`` on the PATH."""
    return os.environ.get("CXX") or next(filter(None, map(shutil.which, ("c++", "g++", "clang++"))), None)


def _build() -> ctypes.CDLL:
    """Compile :data:`KERNEL_SOURCE` into a shared library and load it; raise ``RuntimeError`` if impossible."""
    compiler = _compiler()
    if compiler is None:
        raise RuntimeError("no C++ compiler found (set CXX)")
    _LOG.info("sparse_tutorial.fused: compiling the sparsemax kernel with %s (once per process)", compiler)
    with tempfile.TemporaryDirectory() as directory:
        library_path = Path(directory) / "fused_sparsemax.so"
        for flags in COMPILER_FLAGS:
            command = [compiler, *flags, "-shared", "-fPIC", str(KERNEL_SOURCE), "-o", str(library_path)]
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode == 0:
                return _declare(ctypes.CDLL(str(library_path)))  # loaded: the file may go
    last_line = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
    raise RuntimeError(f"{compiler} failed: {last_line}")


def _declare(library: ctypes.CDLL) -> ctypes.CDLL:
    """Set the C signatures of the kernel's entry points (see the end of the C++ source)."""
    for name in _KERNEL_DTYPES.values():
        forward, backward = getattr(library, f"sparsemax_forward_{name}"), getattr(library, f"sparsemax_backward_{name}")
        forward.argtypes, forward.restype = [_POINTER, _POINTER, _INT64, _INT64, ctypes.c_int], _INT64
        backward.argtypes, backward.restype = [_POINTER, _POINTER, _POINTER, _INT64, _INT64, ctypes.c_int], None
    return library


class _Kernel:
    """The compiled library, built on first use, or the reason it cannot be (then eager is used)."""

    def __init__(self) -> None:
        self.library: Optional[ctypes.CDLL] = None
        self.failure: Optional[str] = None

    def ready(self) -> bool:
        """Build the library once; False (and one warning, the first time) if that fails."""
        if self.library is None and self.failure is None:
            try:
                self.library = _build()
            except (RuntimeError, OSError) as error:
                self.failure = str(error)
                warnings.warn(f"fused_sparsemax cannot compile its kernel ({self.failure}); using the eager "
                              f"sparsemax (same results, eager speed)", RuntimeWarning, stacklevel=3)
        return self.library is not None

    def forward(self, x: Tensor) -> Tensor:
        """Sparsemax of the rows of the contiguous ``x: (rows, n)``; raises on NaN or +inf scores."""
        weights = torch.empty_like(x)
        entry = getattr(self.library, f"sparsemax_forward_{_KERNEL_DTYPES[x.dtype]}")
        if entry(x.data_ptr(), weights.data_ptr(), *x.shape, torch.get_num_threads()):
            check_row_max(x.amax(1, keepdim=True), "scores")  # names the problem (the kernel counted it)
        return weights

    def backward(self, weights: Tensor, grad_output: Tensor) -> Tensor:
        """``s ⊙ (v − mean_S v)`` for the rows of the contiguous ``grad_output: (rows, n)``."""
        grad = torch.empty_like(weights)
        entry = getattr(self.library, f"sparsemax_backward_{_KERNEL_DTYPES[weights.dtype]}")
        entry(weights.data_ptr(), grad_output.data_ptr(), grad.data_ptr(), *weights.shape, torch.get_num_threads())
        return grad


_KERNEL = _Kernel()


class FusedSparsemaxFunction(torch.autograd.Function):
    """Sparsemax along ``dim`` by the C++ kernel, forward and backward: one autograd node.

    The reshaping to contiguous ``(rows, n)`` and back, and the float32 upcast of half precision, happen
    inside the node, so autograd records none of them.
    """

    @staticmethod
    def forward(ctx, scores: Tensor, dim: int) -> Tensor:  # noqa: D102 - documented on the class
        weights = _KERNEL.forward(_as_rows(compute_dtype(scores.detach()), dim))
        ctx.save_for_backward(weights)
        ctx.dim = dim
        return _from_rows(weights, scores, dim).to(scores.dtype)

    @staticmethod
    @once_differentiable  # the kernel is not differentiable twice, and autograd says so if asked
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, None]:  # noqa: D102
        (weights,) = ctx.saved_tensors
        grad = _KERNEL.backward(weights, _as_rows(grad_output.to(weights.dtype), ctx.dim))
        return _from_rows(grad, grad_output, ctx.dim).to(grad_output.dtype), None


def fused_sparsemax(scores: Tensor, dim: int = -1) -> Tensor:
    """Sparsemax by the C++ kernel: the exact projection of :func:`~sparse_tutorial.projections.sparsemax`.

    Use it wherever the eager one is used, e.g. ``Attention(score, projection=fused_sparsemax)``. Results
    equal the eager ones up to float rounding (both are exact; they sum in different orders). Off the CPU,
    or without a working C++ compiler, it is the eager function.

    Args:
        scores: ``(..., n, ...)``, masked positions ``-inf``.
        dim: the dimension that is projected.
    Returns:
        weights of the shape and dtype of ``scores``.
    """
    check_floating(scores, "scores", dim)
    if scores.device.type != "cpu" or not _KERNEL.ready():
        return sparsemax(scores, dim)
    return FusedSparsemaxFunction.apply(scores, dim)


class FusedSparsemax(Sparsemax):
    """Module twin of :func:`fused_sparsemax`: a :class:`~sparse_tutorial.projections.Sparsemax` on the kernel."""

    def forward(self, scores: Tensor) -> Tensor:
        return fused_sparsemax(scores, self.dim)
