"""Did a change slow the projections down? Time them at an older commit and now, in one run.

Each version runs in its own process (the older one from ``git archive`` of its ``sparse_tutorial/``, so
both can be imported), alternately, ``--rounds`` times. In every process each projection is timed with
``torch.utils.benchmark`` against ``torch.softmax`` at the same shape, forward and forward+backward, on one
thread; the ratio to ``torch.softmax`` measured in the same process is what is compared, so a machine that
is busier in one round than in another moves both numbers of a ratio alike. The table shows each ratio's
median over the rounds, before and after, and the change.

    python benchmarks/bench_against_commit.py --against 63d40bf        # e.g. before the static code paths
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHAPES = [(4096, 32), (4096, 128), (1024, 1024), (64, 8192)]
"""The shapes of ``bench_projections.py``: many short rows, medium rows, a square matrix, few very long rows."""
METHODS = ("softmax", "sparsemax", "entmax15")
"""The library's projections timed (each against ``torch.softmax``)."""

_WORKER = """
import json, sys
import torch
import torch.utils.benchmark as benchmark
import sparse_tutorial
shapes, methods, min_run_time = json.loads(sys.argv[1])
torch.set_num_threads(1)

def seconds(statement):
    timer = benchmark.Timer(stmt="statement()", globals={"statement": statement}, num_threads=1)
    timer.timeit(2)
    return timer.blocked_autorange(min_run_time=min_run_time).median

ratios = {}
for rows, length in shapes:
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(rows, length, generator=generator)
    upstream = torch.randn(rows, length, generator=generator)
    leaf = scores.clone().requires_grad_(True)
    functions = {"torch.softmax": lambda x: torch.softmax(x, -1)}
    functions.update({name: (lambda f: lambda x: f(x, -1))(getattr(sparse_tutorial, name)) for name in methods})
    timed = {}
    for name, f in functions.items():
        with torch.no_grad():
            forward = seconds(lambda: f(scores))
        timed[name] = (forward, seconds(lambda: torch.autograd.grad(f(leaf), leaf, upstream)))
    for name in methods:
        for mode, index in (("forward", 0), ("forward_backward", 1)):
            ratios[f"{rows}x{length} {name} {mode}"] = timed[name][index] / timed["torch.softmax"][index]
print(json.dumps({"module": sparse_tutorial.__file__, "ratios": ratios}))
"""


def _export(commit: str, folder: Path) -> str:
    """``sparse_tutorial/`` at ``commit`` into ``folder``; returns the full commit."""
    sys.path.insert(0, str(REPO_ROOT))
    from sparse_tutorial.runs.equivalence import _export as export

    return export(REPO_ROOT, commit, folder)


def _run(root: Path, min_run_time: float) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _WORKER, json.dumps([SHAPES, METHODS, min_run_time])],
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, check=True, cwd=root)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(result["module"]).is_relative_to(root), f"imported {result['module']}, not the code under {root}"
    return result["ratios"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the older commit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-run-time", type=float, default=0.2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as old_root:
        commit = _export(args.against, Path(old_root))
        samples: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
        for _ in range(args.rounds):
            for label, root in (("before", Path(old_root)), ("after", REPO_ROOT)):
                for key, ratio in _run(root, args.min_run_time).items():
                    samples[label].setdefault(key, []).append(ratio)
    print(f"ratio to torch.softmax (median of {args.rounds} rounds, one thread): before = {commit[:10]}, "
          f"after = the working tree")
    print(f"{'shape method mode':<40} {'before':>8} {'after':>8} {'change':>8}")
    for key in samples["before"]:
        before, after = (statistics.median(samples[label][key]) for label in ("before", "after"))
        print(f"{key:<40} {before:8.3f} {after:8.3f} {100 * (after / before - 1):+7.1f}%")


if __name__ == "__main__":
    main()
