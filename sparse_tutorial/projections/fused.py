"""The compiled CPU kernel behind :func:`~sparse_tutorial.projections.sparsemax` and
:func:`~sparse_tutorial.projections.entmax15`.

On the CPU both projections call this kernel when it is available, and the pure-PyTorch ("eager") code
of :mod:`~sparse_tutorial.projections.sparsemax_eager` and :mod:`~sparse_tutorial.projections.entmax_eager` otherwise
(:mod:`~sparse_tutorial.projections.kernel_dispatch` chooses); you never call it yourself. It runs the same exact algorithms as the eager code (shift by the
row max, then a threshold search that stops when the support stops changing), and the closed-form
backward passes, as one hand-written C++ function each: ``fused_sparsemax.cpp`` beside this file, whose
header explains the layout (one short row per SIMD lane, so sums over a row never cross lanes; long rows
in consecutive vectors) and why sums are accumulated in double.

Compilation. The kernel is compiled with the system's C++ compiler (``$CXX``, else ``c++``, ``g++`` or
``clang++``) the first time it is needed on a machine, which takes a few seconds and is logged, and is called
through ``ctypes``. The shared library is kept in the kernel cache, :func:`kernel_cache_dir` (``kernels/`` in
the library's cache folder: ``$SPARSE_TUTORIAL_CACHE``, else ``~/.cache/sparse_tutorial``), under a name
that hashes everything that makes it: the source, the compiler and its version, the flags, and the CPU
(its model and feature flags, for ``-march=native``). A later process with the same of all of these loads it
in milliseconds; any change builds a new one beside it. A flag set the compiler rejects is remembered
there too (``.failed``), so it is not tried again. Deleting the folder clears the cache. It is compiled for the CPU it runs on (``-march=native``): its vectors are as
wide as that CPU's registers (64 bytes with AVX-512, 32 with AVX2), because a kernel written for wider
vectors than the CPU has is slower than plain PyTorch. ``$SPARSE_TUTORIAL_MARCH`` compiles for another
target instead (``x86-64-v3`` is AVX2, ``x86-64-v4`` AVX-512), which is how the benchmark times both on one
machine. When no compiler works, the first failure is reported in one warning and the eager code is used:
same results up to float rounding, eager speed. ``$SPARSE_TUTORIAL_KERNEL=0``, or the :func:`eager` context,
turns the kernel off.

Processes. In a child created by ``fork`` (e.g. a ``DataLoader`` worker) the kernel runs on one thread:
GNU OpenMP cannot start threads in a child forked after the parent used them, and would wait forever.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Iterator, Optional

import torch
from torch import Tensor

KERNEL_SOURCE = Path(__file__).with_name("fused_sparsemax.cpp")
"""The C++ source of the forward and backward kernels."""

PROJECTIONS = ("sparsemax", "entmax15")
"""The projections the kernel computes (its entry points are ``NAME_forward_TYPE``/``NAME_backward_TYPE``)."""

_LOG = logging.getLogger(__name__)
_KERNEL_DTYPES = {torch.float32: "float", torch.float64: "double"}
_POINTER, _INT64 = ctypes.c_void_p, ctypes.c_int64


def target() -> str:
    """The ``-march`` the kernel is compiled for: ``$SPARSE_TUTORIAL_MARCH``, else ``native``."""
    return os.environ.get("SPARSE_TUTORIAL_MARCH") or "native"


def compiler_flags() -> list[list[str]]:
    """Flag sets tried in order: tuned for :func:`target` and multi-threaded, then plain (any C++17 compiler).

    ``-fno-math-errno`` lets ``sqrt`` (entmax's backward pass) be one vector instruction: the kernel never
    takes the root of a negative number, so there is no error for ``errno`` to report.
    """
    return [["-O3", "-std=c++17", "-fno-math-errno", f"-march={target()}", "-fopenmp"],
            ["-O3", "-std=c++17", "-fno-math-errno"]]


def _compiler() -> Optional[str]:
    """The C++ compiler to use: ``$CXX`` if set, else the first of ``c++``, ``g++``, ``clang++`` on the PATH."""
    return os.environ.get("CXX") or next(filter(None, map(shutil.which, ("c++", "g++", "clang++"))), None)


def kernel_cache_dir() -> Path:
    """The folder of the compiled kernels: ``kernels/`` in :func:`~sparse_tutorial.data.cache.cache_dir`."""
    from sparse_tutorial.data.cache import cache_dir

    return cache_dir() / "kernels"


def _cpu_identity() -> str:
    """What ``-march=native`` compiles for: the CPU's model and feature flags (``/proc/cpuinfo``), else the
    platform's description of the processor."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    wanted = [line for line in lines if line.startswith(("model name", "flags", "Features", "CPU part"))]
    return "\n".join(dict.fromkeys(wanted)) or f"{platform.machine()} {platform.processor()}"


def _cache_key(compiler: str, flags: list[str]) -> str:
    """A digest of everything the shared library depends on: source, compiler and version, flags, CPU."""
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    digest = hashlib.sha256(KERNEL_SOURCE.read_bytes())
    for part in (shutil.which(compiler) or compiler, version, " ".join(flags), _cpu_identity()):
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()[:20]


def _build() -> tuple[ctypes.CDLL, list[str]]:
    """Load the kernel from :func:`kernel_cache_dir`, compiling :data:`KERNEL_SOURCE` there first if it is not
    cached yet; return the library and the flags that built it (the first flag set that works).

    Raises:
        RuntimeError: no compiler, or every flag set failed (the message ends with the compiler's last line).
    """
    compiler = _compiler()
    if compiler is None:
        raise RuntimeError("no C++ compiler found (set CXX)")
    folder = kernel_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    last_line = ""
    for flags in compiler_flags():
        library_path = folder / f"fused_sparsemax-{_cache_key(compiler, flags)}.so"
        failed = library_path.with_suffix(".failed")
        if failed.exists():  # this compiler cannot build with these flags: not tried again on this machine
            last_line = failed.read_text(encoding="utf-8")
            continue
        if library_path.exists():
            try:
                library = _declare(ctypes.CDLL(str(library_path)))
                _LOG.info("sparse_tutorial.projections.fused: loaded the cached kernel %s", library_path)
                return library, flags
            except (OSError, AttributeError):  # unreadable or not our library: built again below
                library_path.unlink(missing_ok=True)
        _LOG.info("sparse_tutorial.projections.fused: compiling the projection kernel with %s for %s into %s "
                  "(once per machine)", compiler, target(), folder)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".so.tmp", delete=False) as handle:
            building = Path(handle.name)
        command = [compiler, *flags, "-shared", "-fPIC", str(KERNEL_SOURCE), "-o", str(building)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode == 0:
            os.replace(building, library_path)  # all at once: a process loading it never sees half a file
            return _declare(ctypes.CDLL(str(library_path))), flags
        building.unlink(missing_ok=True)
        last_line = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
        failed.write_text(last_line, encoding="utf-8")
    raise RuntimeError(f"{compiler} failed: {last_line}")


def _declare(library: ctypes.CDLL) -> ctypes.CDLL:
    """Set the C signatures of the kernel's entry points (see the end of the C++ source)."""
    for projection in PROJECTIONS:
        for name in _KERNEL_DTYPES.values():
            forward = getattr(library, f"{projection}_forward_{name}")
            backward = getattr(library, f"{projection}_backward_{name}")
            forward.argtypes, forward.restype = [_POINTER, _POINTER, _POINTER, _INT64, _INT64, ctypes.c_int], _INT64
            backward.argtypes, backward.restype = [_POINTER, _POINTER, _POINTER, _INT64, _INT64, ctypes.c_int], None
    library.vector_bytes.restype = ctypes.c_int
    return library


def _raw(tensor: Tensor) -> Tensor:
    """``tensor`` with its memory holding its values: a lazily negated or conjugated view is materialised
    (``data_ptr`` of ``torch._neg_view(x)`` points at ``x``'s numbers)."""
    return tensor.resolve_neg().resolve_conj() if tensor.is_neg() or tensor.is_conj() else tensor


class Kernel:
    """The compiled library, built on first use, or the reason it cannot be (then the eager code is used)."""

    def __init__(self) -> None:
        self.library: Optional[ctypes.CDLL] = None
        self.flags: Optional[list[str]] = None
        self.failure: Optional[str] = None
        self.enabled = os.environ.get("SPARSE_TUTORIAL_KERNEL", "1") != "0"
        self.forked = False  # set in a child process created by fork: one thread, no OpenMP

    def ready(self) -> bool:
        """True if the kernel is enabled and compiled (building it on the first call; on failure one warning)."""
        if not self.enabled:
            return False
        if self.library is None and self.failure is None:
            try:
                self.library, self.flags = _build()
            except (RuntimeError, OSError) as error:
                self.failure = str(error)
                warnings.warn(f"sparse_tutorial cannot compile its CPU kernel ({self.failure}); sparsemax and "
                              f"entmax15 use the eager PyTorch code (same results, slower)", RuntimeWarning,
                              stacklevel=4)
        return self.library is not None

    def _threads(self) -> int:
        return 1 if self.forked else torch.get_num_threads()

    def forward(self, projection: str, scores: Tensor) -> tuple[Tensor, Tensor, int]:
        """Projection of the rows of the contiguous ``scores: (rows, n)``.

        Returns:
            ``(weights, saved, invalid_rows)``: ``saved`` is what :meth:`backward` needs, the weights
            themselves (sparsemax) or their square roots (entmax15); ``invalid_rows`` counts rows with NaN
            or +inf.
        """
        scores = _raw(scores)
        weights = torch.empty_like(scores)
        saved = torch.empty_like(scores) if projection == "entmax15" else weights
        entry = getattr(self.library, f"{projection}_forward_{_KERNEL_DTYPES[scores.dtype]}")
        invalid_rows = entry(scores.data_ptr(), weights.data_ptr(), saved.data_ptr(), *scores.shape, self._threads())
        return weights, saved, invalid_rows

    def backward(self, projection: str, saved: Tensor, grad_output: Tensor) -> Tensor:
        """The vector-Jacobian product for the rows of the contiguous ``grad_output: (rows, n)``, given the
        ``saved`` tensor of :meth:`forward`."""
        grad_output = _raw(grad_output)
        grad = torch.empty_like(saved)
        entry = getattr(self.library, f"{projection}_backward_{_KERNEL_DTYPES[saved.dtype]}")
        entry(saved.data_ptr(), grad_output.data_ptr(), grad.data_ptr(), *saved.shape, self._threads())
        return grad

    def describe(self) -> dict:
        """What ran: ``{"enabled", "compiled", "march", "vector_bytes", "flags", "failure"}`` (builds if needed)."""
        compiled = self.ready()
        return {"enabled": self.enabled, "compiled": compiled, "march": target(),
                "vector_bytes": self.library.vector_bytes() if compiled else None,
                "flags": " ".join(self.flags) if compiled else None, "failure": self.failure}


KERNEL = Kernel()
"""The process's kernel (compiled on first use)."""


def describe_kernel() -> dict:
    """:meth:`Kernel.describe` of the process's kernel: whether sparsemax/entmax15 run compiled, and for which CPU."""
    return KERNEL.describe()


@contextlib.contextmanager
def eager() -> Iterator[None]:
    """Within this context sparsemax and entmax15 run the eager PyTorch code (e.g. to time or compare it)."""
    previous, KERNEL.enabled = KERNEL.enabled, False
    try:
        yield
    finally:
        KERNEL.enabled = previous


def _forked() -> None:
    KERNEL.forked = True


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forked)
