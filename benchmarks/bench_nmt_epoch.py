"""CPU seconds of one epoch of the ``nmt`` baseline at the medium sizes, this library against an earlier
commit's, and what that does to issue 29's goal ("the baseline reaches the same dev BLEU in ≤ half today's
CPU time").

An epoch is what a stored run repeats: training on every batch of the medium corpus, then the greedy
translation of the dev verses and their BLEU (``train_system`` with one epoch, seed 0, one thread). Two
versions run it, each in its own process, in turns (``--rounds`` times, so a busy machine slows both alike;
the median is kept):

* ``before``: the library at ``--against`` (default ``ff8b0d2``, the code of the first stored runs);
* ``this code``: this library.

Both must end the epoch with the same numbers (its history without timings); the script fails
otherwise, since a speed-up that changes the result is another recipe, not a faster one. The summary gives
each version's median CPU seconds, ``epoch_cpu_ratio`` (this code / before) and, with the epochs to the
target dev BLEU from ``book/results/nmt_training_speed.json`` (the schedule's ``epoch_ratio``), the CPU
time to that BLEU against the constant-rate recipe on the old code: ``cpu_ratio_to_target`` =
``epoch_ratio × epoch_cpu_ratio``, with its range over the rounds. Writes ``book/results/nmt_epoch_speed.json``
(``--summary-only`` recomputes its summary from the stored timings):

    python benchmarks/bench_nmt_epoch.py                  # 3 rounds: about 10 minutes of one core
    python benchmarks/bench_nmt_epoch.py --rounds 1 --against HEAD~3
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tqdm import tqdm

from sparse_tutorial.runs.equivalence import _export, untimed
from sparse_tutorial.runs.runner import _git_commit, results_dir

THIS_LIBRARY = Path(__file__).resolve().parents[1]
EPOCH = """
import dataclasses, json, os, sys, time
import torch
import sparse_tutorial
assert sparse_tutorial.__file__.startswith(os.getcwd()), sparse_tutorial.__file__
torch.set_num_threads(1)
from sparse_tutorial.experiments.nmt.data import translation_corpus
from sparse_tutorial.experiments.nmt.training import SIZES, SYSTEMS, train_system
sizes = dataclasses.replace(SIZES["medium"], epochs=1)
data = translation_corpus(sizes.corpus)
start = time.process_time()
_, history, _ = train_system(SYSTEMS["NMT"], data, sizes, seed=0, device="cpu")
from sparse_tutorial.hardware import cpu_backend
print(json.dumps({"cpu_seconds": time.process_time() - start, "epoch": history.epochs[0], "cpu": cpu_backend()}))
"""
"""One epoch, run with the library found in the working directory."""


def one_epoch(root: Path) -> dict[str, Any]:
    """:data:`EPOCH` in a fresh process on one thread, importing the library under ``root``."""
    done = subprocess.run([sys.executable, "-c", EPOCH], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the epoch with {root} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(seconds: dict[str, list[float]], epoch_ratio: float | None) -> dict[str, Any]:
    """Median CPU seconds per version, ``epoch_cpu_ratio`` (this code / before, of the medians), the ratio of each
    round (``round_ratios``: how much the machine's noise moves it) and ``cpu_ratio_to_target`` (median, and
    ``cpu_ratio_to_target_range`` over the rounds)."""
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    ratio = medians["this code"] / medians["before"]
    rounds = [now / before for now, before in zip(seconds["this code"], seconds["before"])]
    return {"median_cpu_seconds": {name: round(value, 1) for name, value in medians.items()},
            "epoch_cpu_ratio": round(ratio, 3),
            "round_ratios": [round(value, 3) for value in rounds],
            "schedule_epoch_ratio": epoch_ratio,
            "cpu_ratio_to_target": round(epoch_ratio * ratio, 3) if epoch_ratio is not None else None,
            "cpu_ratio_to_target_range": ([round(epoch_ratio * min(rounds), 3), round(epoch_ratio * max(rounds), 3)]
                                          if epoch_ratio is not None else None)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="ff8b0d2", help="the commit whose library is 'before'")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--summary-only", action="store_true",
                        help="time nothing: recompute the summary of the stored timings (after a new schedule file)")
    args = parser.parse_args()
    path = Path(results_dir()) / "nmt_epoch_speed.json"
    schedule = Path(results_dir()) / "nmt_training_speed.json"
    epoch_ratio = json.loads(schedule.read_text()).get("epoch_ratio") if schedule.exists() else None
    if args.summary_only:
        payload = json.loads(path.read_text())
        recomputed = summary(payload["cpu_seconds"], epoch_ratio)
        path.write_text(json.dumps({**payload, **recomputed}, indent=1) + "\n")
        print(json.dumps(recomputed, indent=1))
        return
    load_before = [round(value, 2) for value in os.getloadavg()]
    with tempfile.TemporaryDirectory() as folder:
        before_root = Path(folder)
        against = _export(THIS_LIBRARY, args.against, before_root)
        versions = {"before": before_root, "this code": THIS_LIBRARY}
        seconds: dict[str, list[float]] = {name: [] for name in versions}
        reference: dict[str, Any] | None = None  # the epoch "before" ended with
        with tqdm(total=args.rounds * len(versions), desc="epochs", unit="epoch") as bar:
            for _ in range(args.rounds):
                for name, root in versions.items():
                    result = one_epoch(root)
                    seconds[name].append(round(result["cpu_seconds"], 2))
                    backend, epoch = result["cpu"], untimed(result["epoch"])
                    if reference is None:
                        reference = epoch
                    elif epoch != reference:
                        raise SystemExit(f"{name} ended the epoch with other numbers than before: "
                                         f"{epoch} against {reference}")
                    bar.update()
    payload = {"benchmark": "nmt_epoch_speed", "against": against, "cpu_seconds": seconds,
               "same_numbers": True, "epoch": reference, **summary(seconds, epoch_ratio),
               "load_average_before": load_before, "load_average_after": [round(v, 2) for v in os.getloadavg()],
               "command": "python benchmarks/bench_nmt_epoch.py " + " ".join(sys.argv[1:]),
               "git_commit": _git_commit(), "cpu": backend,
               "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    path.write_text(json.dumps(payload, indent=1) + "\n")
    print(json.dumps(summary(seconds, epoch_ratio), indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
