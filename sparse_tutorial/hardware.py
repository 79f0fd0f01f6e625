"""Which CPU back end ran: the processor, its vector instructions and the kernels PyTorch picked for it.

Trained numbers depend on it. ATen, oneDNN and MKL choose their vector kernels per CPU (AVX2 or AVX-512)
and split work over the threads they have, so float rounding, and with it every trained number, differs
between machines in the 2nd-3rd digit. :func:`cpu_backend` records what a run used; every results file
stores it (``environment.cpu``), and the reproducibility appendix explains what follows from it.

Example::

    >>> from sparse_tutorial.hardware import cpu_backend
    >>> cpu_backend()["torch_capability"] in {"DEFAULT", "AVX2", "AVX512", "ZVECTOR", "NO AVX"}
    True
"""
from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import torch

VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16",
                "amx_tile", "avx_vnni")
"""The ``/proc/cpuinfo`` flags that decide which kernels ATen, oneDNN and MKL run (in this order)."""

BACKEND_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                     "SPARSE_TUTORIAL_MARCH", "SPARSE_TUTORIAL_KERNEL")
"""Environment variables that change the numeric back end without changing the machine (the last two: the
CPU the library's own kernel is compiled for, and whether it runs; see :mod:`sparse_tutorial.projections.fused`)."""


def _cpuinfo() -> dict[str, str]:
    """The first processor's entries of ``/proc/cpuinfo`` (empty where there is no such file)."""
    path = Path("/proc/cpuinfo")
    if not path.is_file():
        return {}
    entries: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            break  # the first processor is enough: every core of one machine has the same flags
        key, _, value = line.partition(":")
        entries[key.strip()] = value.strip()
    return entries


def cpu_backend() -> dict[str, Any]:
    """What decides this process's CPU arithmetic.

    Returns:
        ``model`` (e.g. ``"AMD EPYC 7B13"``; the platform's processor string where ``/proc/cpuinfo`` is
        missing), ``torch_capability`` (the vector kernels ATen dispatches to: ``"AVX512"``, ``"AVX2"``,
        ``"DEFAULT"``, ...), ``vector_flags`` (those of :data:`VECTOR_FLAGS` the CPU has; ``None`` where
        unknown), ``torch_threads``, and ``overrides`` (the variables of :data:`BACKEND_VARIABLES` that
        are set, which make the process imitate another CPU).
    """
    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    return {
        "model": info.get("model name") or platform.processor() or platform.machine(),
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
        "vector_flags": [flag for flag in VECTOR_FLAGS if flag in flags] if flags else None,
        "torch_threads": torch.get_num_threads(),
        "overrides": {name: os.environ[name] for name in BACKEND_VARIABLES if name in os.environ},
    }


def describe_cpu_backend(backend: dict[str, Any] | None) -> str:
    """One line for a chapter or a log, e.g. ``"AMD EPYC 7B13, AVX2 kernels, 2 threads"``.

    Args:
        backend: a :func:`cpu_backend` dictionary, e.g. ``results["environment"]["cpu"]``; ``None`` (a
            results file written before this was recorded) gives ``"CPU back end not recorded"``.
    """
    if backend is None:
        return "CPU back end not recorded"
    overrides = ", ".join(f"{key}={value}" for key, value in backend["overrides"].items())
    threads = backend["torch_threads"]
    return (f"{backend['model']}, {backend['torch_capability']} kernels, {threads} thread{'s' * (threads != 1)}"
            + (f" (imitated: {overrides})" if overrides else ""))

