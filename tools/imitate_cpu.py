"""Run a command as if on another CPU: other vector kernels and thread counts, on this machine.

ATen, oneDNN and MKL pick their kernels per CPU; environment variables cap what they may pick, so one
machine can produce the float rounding of another. ``make test`` uses this to re-execute the experiment
chapters under a back end other than the one that stored their outputs (tests/test_portability.py);
a contributor can use it to see what a reader's CPU will print::

    python tools/imitate_cpu.py avx2-1thread -- python -m pytest book/part2
    python tools/imitate_cpu.py --list

An imitation can only take away instructions: on an AVX2 machine ``avx512`` runs AVX2 kernels (check
``torch.backends.cpu.get_cpu_capability()``, which :func:`capability_under` reports).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

IMITATIONS: dict[str, dict[str, str]] = {
    "native": {},
    "native-1thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2",
             "SPARSE_TUTORIAL_MARCH": "x86-64-v3"},
    "avx2-1thread": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2",
                     "SPARSE_TUTORIAL_MARCH": "x86-64-v3", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "default-1thread": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_CBWR": "COMPATIBLE",
                        "SPARSE_TUTORIAL_MARCH": "x86-64", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
}
"""Back-end settings by name. ``default`` is ATen's scalar code (no SIMD), which no reader's CPU runs but
which rounds differently from every one of them; ``COMPATIBLE`` is MKL's most portable code path.
``SPARSE_TUTORIAL_MARCH`` builds the library's own kernel (sparse_tutorial.projections.fused) for the same CPU:
``x86-64-v3`` is AVX2, ``x86-64`` the baseline's SSE2."""


def environment_for(name: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with imitation ``name``'s variables set.

    Raises:
        ValueError: ``name`` is not in :data:`IMITATIONS`.
    """
    if name not in IMITATIONS:
        raise ValueError(f"imitation must be one of {sorted(IMITATIONS)}, got {name!r}")
    return {**(os.environ if base is None else base), **IMITATIONS[name]}


def capability_under(name: str) -> tuple[str, int]:
    """The ATen capability and torch thread count a fresh Python process gets under imitation ``name``."""
    probe = "import torch; print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())"
    out = subprocess.run([sys.executable, "-c", probe], env=environment_for(name), capture_output=True,
                         text=True, check=True).stdout.split()
    return " ".join(out[:-1]), int(out[-1])


def other_than_native() -> str:
    """An imitation whose kernels differ from this machine's own: AVX2 on an AVX-512 CPU, else scalar.

    Both use one thread, so a chapter that runs on the default thread count (two in CI) changes its
    reduction order as well.
    """
    native, _ = capability_under("native")
    return "avx2-1thread" if native == "AVX512" else "default-1thread"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/imitate_cpu.py", description=__doc__.split("\n")[0])
    parser.add_argument("imitation", nargs="?", choices=sorted(IMITATIONS), help="back end to imitate")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    parser.add_argument("--list", action="store_true", help="print each imitation, its variables and what it gives here")
    args = parser.parse_args(argv)
    if args.list:
        for name, variables in IMITATIONS.items():
            capability, threads = capability_under(name)
            settings = " ".join(f"{k}={v}" for k, v in variables.items()) or "(nothing set)"
            print(f"{name:16s} -> {capability}, {threads} thread(s): {settings}")
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.imitation is None or not command:
        parser.error("give an imitation and a command: imitate_cpu.py avx2 -- python -m pytest book")
    capability, threads = capability_under(args.imitation)
    print(f"imitate_cpu: {args.imitation} ({capability} kernels, {threads} thread(s)): {' '.join(command)}",
          file=sys.stderr, flush=True)
    return subprocess.run(command, env=environment_for(args.imitation)).returncode


if __name__ == "__main__":
    sys.exit(main())
