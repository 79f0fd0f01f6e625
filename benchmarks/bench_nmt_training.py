"""How fast the ``nmt`` baseline learns, in CPU time, with the medium profile's batches of 750 target pieces
against the 1,500 of the stored run before it trained every system from scratch (issue 29's "faster
training first").

Both settings train the NMT baseline with seed 0 for ``--epochs`` epochs, one after the other in this
process on one thread, from the same corpus, and record after every epoch the CPU seconds so far and the
greedy dev BLEU on the medium profile's dev verses. The result says which dev BLEU each setting reaches and
how much CPU time each needs to reach the best BLEU both reach. Writes ``book/results/nmt_training_speed.json``
(with the CPU, the commit and the command); run it on a quiet machine:

    python benchmarks/bench_nmt_training.py              # about 25 minutes of one core
    python benchmarks/bench_nmt_training.py --epochs 4   # a shorter look
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import time
from pathlib import Path

import torch

from sparse_tutorial.experiments.nmt.data import translation_corpus
from sparse_tutorial.experiments.nmt.training import SIZES, SYSTEMS, train_system
from sparse_tutorial.experiments.runner import _git_commit, results_dir
from sparse_tutorial.hardware import cpu_backend

BATCH_TOKENS = {"before (1,500 target pieces)": 1500, "medium profile (750 target pieces)": 750}


def learning_curve(batch_tokens: int, epochs: int) -> dict:
    """Dev BLEU after each epoch and the CPU seconds of training and dev decoding so far."""
    sizes = dataclasses.replace(SIZES["medium"], batch_tokens=batch_tokens, epochs=epochs)
    data = translation_corpus(sizes.corpus)
    cpu: list[float] = []
    start = time.process_time()
    original = data.bleu

    def timed_bleu(outputs, pairs):  # dev BLEU is computed once per epoch, at its end: stamp the CPU time
        score = original(outputs, pairs)
        if pairs is data.dev:
            cpu.append(time.process_time() - start)
        return score

    data.bleu = timed_bleu
    try:
        _, history, _ = train_system(SYSTEMS["NMT"], data, sizes, seed=0, device="cpu")
    finally:
        data.bleu = original
    return {"batch_tokens": batch_tokens, "dev_bleu": [e["dev"] for e in history.epochs],
            "cpu_seconds": [round(c, 1) for c in cpu]}


def seconds_to_reach(curve: dict, bleu: float) -> float | None:
    """CPU seconds until the first epoch whose dev BLEU is at least ``bleu``."""
    return next((s for b, s in zip(curve["dev_bleu"], curve["cpu_seconds"]) if b >= bleu), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)
    curves = {name: learning_curve(tokens, args.epochs) for name, tokens in BATCH_TOKENS.items()}
    target = min(max(curve["dev_bleu"]) for curve in curves.values())
    reach = {name: seconds_to_reach(curve, target) for name, curve in curves.items()}
    before, after = (reach[name] for name in BATCH_TOKENS)
    payload = {"benchmark": "nmt_training_speed", "command": f"python benchmarks/bench_nmt_training.py --epochs {args.epochs}",
               "git_commit": _git_commit(), "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "cpu": cpu_backend(), "curves": curves, "target_dev_bleu": target, "cpu_seconds_to_target": reach,
               "ratio": after / before if before and after else None}
    path = Path(results_dir()) / "nmt_training_speed.json"
    path.write_text(json.dumps(payload, indent=1) + "\n")
    print(f"dev BLEU {target:.1f}: {before} s before, {after} s now (ratio {payload['ratio']}); wrote {path}")


if __name__ == "__main__":
    main()
