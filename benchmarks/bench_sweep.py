"""What running an experiment's runs in parallel gains on this machine: one quick-profile sweep, timed serially
and with ``--workers 2`` (Ray), each in a fresh process and a fresh runs folder.

For every way of running it records the wall time of the whole command, the seconds of each run, the peak
memory of each worker process, and whether the runs' numbers equal those of the serial run with the same
threads per run (timings aside). Writes ``book/results/sweep_timing.json``; the reproducibility appendix
points to it. Run it on a quiet machine (the load average before and after is stored):

    python benchmarks/bench_sweep.py                    # nmt's quick grid, about 6 minutes on 2 cores
    python benchmarks/bench_sweep.py --experiment explanation
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sparse_tutorial.hardware import cpu_backend

WAYS = {
    "serial, 1 thread per run": ["--threads-per-run", "1"],
    "serial, 2 threads per run": ["--threads-per-run", "2"],
    "--workers 2, 1 thread per run": ["--workers", "2", "--threads-per-run", "1"],
}
"""Name → extra command-line arguments of ``python -m sparse_tutorial.experiments``."""

REFERENCE = "serial, 1 thread per run"
"""The way whose run results the parallel way must reproduce (same threads per run)."""

TIMING_KEYS = {"tokens_per_second", "train_seconds", "train_and_eval_seconds", "overhead"}


def without_timings(value: object) -> object:
    """``value`` without the wall-clock measurements no two executions share."""
    if isinstance(value, dict):
        return {key: without_timings(item) for key, item in value.items() if key not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(item) for item in value]
    return value


def time_way(experiment: str, arguments: list[str]) -> dict:
    """Run the quick sweep one way in a fresh output folder; its wall time and its runs' records."""
    with tempfile.TemporaryDirectory() as folder:
        tic = time.perf_counter()
        subprocess.run([sys.executable, "-m", "sparse_tutorial.experiments", experiment, "--profile", "quick",
                        "--out", folder, *arguments], check=True)
        wall = time.perf_counter() - tic
        records = [json.loads(path.read_text()) for path in sorted(Path(folder, "runs").glob("*/*.json"))]
    return {"arguments": arguments, "wall_seconds": round(wall, 1), "runs": len(records),
            "run_seconds_total": round(sum(r["seconds"] for r in records), 1),
            "worker_peak_rss_mb": sorted({r["worker_max_rss_mb"] for r in records}),
            "results": {json.dumps(r["run"], sort_keys=True): without_timings(r["result"]) for r in records}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="nmt")
    parser.add_argument("--output", type=Path,
                        default=Path(__file__).resolve().parents[1] / "book" / "results" / "sweep_timing.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    ways = {name: time_way(args.experiment, arguments) for name, arguments in WAYS.items()}
    reference = ways[REFERENCE]["results"]
    for way in ways.values():
        way["same_numbers_as_serial_1_thread"] = way.pop("results") == reference
    report = {"experiment": args.experiment, "profile": "quick",
              "command": "python benchmarks/bench_sweep.py" + f" --experiment {args.experiment}" * (args.experiment != "nmt"),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "cpu": cpu_backend(), "logical_cores": os.cpu_count(),
              "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
              "ways": ways,
              "speedup_of_workers_2": round(ways[REFERENCE]["wall_seconds"]
                                            / ways["--workers 2, 1 thread per run"]["wall_seconds"], 2)}
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({name: {k: v for k, v in way.items() if k != "arguments"} for name, way in ways.items()},
                     indent=1))


if __name__ == "__main__":
    main()
