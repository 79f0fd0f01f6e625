"""How fast is sparse attention? Time every projection against ``torch.softmax`` and the ``entmax`` package.

Forward and forward+backward, float32, standard-normal scores, on the CPU and (when present) CUDA. Every
method is timed with ``torch.utils.benchmark`` in the same process, in interleaved rounds, and reported
as its ratio to ``torch.softmax`` at the same shape; results of ours and entmax's are compared for
equality. Writes ``book/results/benchmarks.json``, which the appendix "How fast is sparse attention?"
reads (it never re-runs this script).

    python benchmarks/bench_projections.py                      # CPU (+ CUDA if available)
    python benchmarks/bench_projections.py --min-run-time 0.2   # quicker, noisier

Run it on a quiet machine: the load average before and after is stored with the timings.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import sys
from pathlib import Path
from typing import Callable

import entmax
import numpy
import torch
import torch.utils.benchmark as benchmark

import sparse_tutorial
from sparse_tutorial import entmax15, softmax, sparsemax
from sparse_tutorial.fused import fused_sparsemax
from sparse_tutorial.hardware import cpu_backend

SHAPES = [(4096, 32), (4096, 128), (1024, 1024), (64, 8192)]
"""(rows, length) pairs: many short rows, medium rows, a square matrix, few very long rows."""

METHODS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "torch.softmax": lambda x: torch.softmax(x, -1),
    "ours.softmax": lambda x: softmax(x, -1),
    "ours.sparsemax": lambda x: sparsemax(x, -1),
    "ours.fused_sparsemax": lambda x: fused_sparsemax(x, -1),
    "ours.entmax15": lambda x: entmax15(x, -1),
    "entmax.sparsemax": lambda x: entmax.sparsemax(x, -1),
    "entmax.sparsemax(k=64)": lambda x: entmax.sparsemax(x, -1, k=64),
    "entmax.entmax15": lambda x: entmax.entmax15(x, -1),
    "entmax.sparsemax_bisect": lambda x: entmax.sparsemax_bisect(x, -1),
    "entmax.entmax_bisect": lambda x: entmax.entmax_bisect(x, 1.5, -1),
}
"""Name → ``fn(scores) -> weights`` along the last dimension."""

CPU_ONLY = {"ours.fused_sparsemax"}
"""Methods with a CPU kernel only (elsewhere they are another row's method): not timed on other devices."""

EQUALITY = [("ours.sparsemax", "entmax.sparsemax"), ("ours.fused_sparsemax", "entmax.sparsemax"),
            ("ours.entmax15", "entmax.entmax15")]
"""Pairs whose outputs (to 1e-6) and input gradients (to 1e-5, sums of float32 rounding) must agree."""


TIMER_THREADS = 1
"""Threads every method runs on while timed (``torch.utils.benchmark.Timer``'s default)."""
SPARSEMAX_IMPLEMENTATIONS = ["ours.sparsemax", "ours.fused_sparsemax"]
"""Our two sparsemax paths, each judged against the speed goals."""


def median_time(statement: Callable[[], object], min_run_time: float) -> float:
    """Median seconds per call of ``statement`` (``torch.utils.benchmark`` syncs CUDA itself).

    Two untimed calls first, under the same thread setting, so that compilation (``fused_sparsemax``
    compiles on its first call) is never timed.
    """
    timer = benchmark.Timer(stmt="statement()", globals={"statement": statement}, num_threads=TIMER_THREADS)
    timer.timeit(2)
    return timer.blocked_autorange(min_run_time=min_run_time).median


def time_shape(shape: tuple[int, int], device: str, rounds: int, min_run_time: float) -> list[dict]:
    """Forward and forward+backward times of every method at one shape, medians over interleaved rounds."""
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(*shape, generator=generator).to(device)
    upstream = torch.randn(*shape, generator=generator).to(device)
    leaf = scores.clone().requires_grad_(True)
    methods = {name: fn for name, fn in METHODS.items() if device == "cpu" or name not in CPU_ONLY}
    samples: dict[str, dict[str, list[float]]] = {name: {"forward": [], "forward_backward": []} for name in methods}
    for _ in range(rounds):
        for name, fn in methods.items():
            with torch.no_grad():
                samples[name]["forward"].append(median_time(lambda: fn(scores), min_run_time))
            samples[name]["forward_backward"].append(
                median_time(lambda: torch.autograd.grad(fn(leaf), leaf, upstream), min_run_time))
    baseline = {mode: statistics.median(samples["torch.softmax"][mode]) for mode in ("forward", "forward_backward")}
    rows = []
    for name in methods:
        row = {"device": device, "shape": list(shape), "method": name}
        for mode in ("forward", "forward_backward"):
            seconds = statistics.median(samples[name][mode])
            row[f"{mode}_ms"] = round(seconds * 1e3, 4)
            row[f"{mode}_ratio_to_softmax"] = round(seconds / baseline[mode], 3)
        rows.append(row)
    return rows


def equality(shape: tuple[int, int], device: str) -> list[dict]:
    """Largest absolute differences between ours and entmax's outputs and input gradients."""
    generator = torch.Generator().manual_seed(1)
    scores = torch.randn(*shape, generator=generator).to(device)
    upstream = torch.randn(*shape, generator=generator).to(device)
    rows = []
    for ours, reference in EQUALITY:
        if device != "cpu" and ours in CPU_ONLY:
            continue
        outputs, gradients = [], []
        for name in (ours, reference):
            leaf = scores.clone().requires_grad_(True)
            output = METHODS[name](leaf)
            gradients.append(torch.autograd.grad(output, leaf, upstream)[0])
            outputs.append(output.detach())
        rows.append({"device": device, "shape": list(shape), "ours": ours, "reference": reference,
                     "max_abs_diff_forward": float((outputs[0] - outputs[1]).abs().max()),
                     "max_abs_diff_backward": float((gradients[0] - gradients[1]).abs().max())})
    return rows


def goals(results: list[dict], equalities: list[dict]) -> dict:
    """The speed issue's CPU goals, evaluated on these measurements."""
    def ratio(method: str, shape: tuple[int, int]) -> float:
        row = next(r for r in results if r["device"] == "cpu" and r["method"] == method and tuple(r["shape"]) == shape)
        return row["forward_backward_ratio_to_softmax"]

    verdicts: dict = {}
    for ours in SPARSEMAX_IMPLEMENTATIONS:
        speedups = {f"{rows}x{length}": round(ratio("entmax.sparsemax", (rows, length)) / ratio(ours, (rows, length)), 2)
                    for rows, length in SHAPES}
        verdicts[ours] = {
            "ratio_at_1024x1024": ratio(ours, (1024, 1024)),
            "at_most_3x_softmax_at_1024x1024": ratio(ours, (1024, 1024)) <= 3,
            "speedup_over_entmax_sparsemax": speedups,
            "at_least_10x_faster_than_entmax_everywhere": all(s >= 10 for s in speedups.values()),
        }
    return {
        "sparsemax": verdicts,
        "entmax15_ratio_at_1024x1024": ratio("ours.entmax15", (1024, 1024)),
        "entmax15_at_most_6x_softmax_at_1024x1024": ratio("ours.entmax15", (1024, 1024)) <= 6,
        "outputs_equal_to_entmax_within_1e-6": all(e["max_abs_diff_forward"] <= 1e-6 for e in equalities),
        "gradients_equal_to_entmax_within_1e-5": all(e["max_abs_diff_backward"] <= 1e-5 for e in equalities),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", default=["cpu", "cuda"], help="devices to time (cuda skipped if absent)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per shape (median taken)")
    parser.add_argument("--min-run-time", type=float, default=0.3, help="seconds per blocked_autorange")
    parser.add_argument("--output", type=Path, default=Path("book/results/benchmarks.json"))
    args = parser.parse_args()
    devices = [d for d in args.devices if d != "cuda" or torch.cuda.is_available()]
    load_before = os.getloadavg()
    results, equalities = [], []
    for device in devices:
        for shape in SHAPES:
            print(f"{device} {shape}", flush=True)
            results += time_shape(shape, device, args.rounds, args.min_run_time)
            equalities += equality(shape, device)
    backend = cpu_backend()  # the kernels and vector width the timings were taken with
    report = {
        "command": " ".join(["python", *sys.argv]),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hardware": {"cpu": backend["model"], "cpu_backend": backend, "logical_cores": os.cpu_count(),
                     "torch_threads": torch.get_num_threads(),
                     "platform": platform.platform(),
                     "gpu": torch.cuda.get_device_name(0) if "cuda" in devices else None},
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
                     "entmax": importlib.metadata.version("entmax"), "sparse_tutorial": sparse_tutorial.__version__},
        "load_average_before": [round(v, 2) for v in load_before],
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
        "settings": {"dtype": "float32", "scores": "standard normal", "rounds": args.rounds, "timer_threads": TIMER_THREADS,
                     "min_run_time_s": args.min_run_time, "statistic": "median over rounds of blocked_autorange medians",
                     "shapes": [list(s) for s in SHAPES], "methods": list(METHODS)},
        "results": results,
        "equality": equalities,
        "goals": goals(results, equalities),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["goals"], indent=1))


if __name__ == "__main__":
    main()
