"""How fast the ``nmt`` baseline learns with the medium profile's learning rate, halved every epoch from
the 13th, against a constant learning rate (the recipe of the first stored from-scratch run, still gaining
after 30 epochs) and against halving from the 9th (issue 29's "faster training first").

Each setting trains the NMT baseline with seed 0 for ``--epochs`` epochs on one thread, from the same
corpus, and records after every epoch the greedy dev BLEU on the medium profile's dev verses and the CPU
seconds so far. Every setting does the same work per epoch (the same batches and model; only the learning
rate differs), so the number of epochs to a dev BLEU is the comparison that holds on any machine; the CPU
seconds are recorded too, but settings trained beside other jobs get fewer instructions per CPU second. The
summary gives the best dev BLEU of the medium recipe (:data:`AFTER`), the epochs and CPU seconds each
setting needs to reach it, and how much the last epoch still changed the dev BLEU (a plateau is what the
stored runs need). Writes ``book/results/nmt_training_speed.json`` (each curve with its CPU, commit and
command); ``--only NAME`` trains one setting and keeps the others' curves from that file, so that settings
can run side by side in separate processes, and ``--summary-only`` recomputes the summary from the stored
curves:

    python benchmarks/bench_nmt_training.py --epochs 30          # about 2 hours of one core
    python benchmarks/bench_nmt_training.py --epochs 4           # a shorter look
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import time
from pathlib import Path
from typing import Any

import torch

from sparse_tutorial.experiments.nmt.data import translation_corpus
from sparse_tutorial.experiments.nmt.training import SIZES, SYSTEMS, train_system
from sparse_tutorial.runs.runner import _git_commit, results_dir
from sparse_tutorial.hardware import cpu_backend

BEFORE = "constant learning rate"
AFTER = "halved each epoch from epoch 13"
"""The medium profile's recipe (``lr_decay_start=12``)."""
SETTINGS: dict[str, dict[str, Any]] = {
    BEFORE: {"lr_decay_start": None},
    "halved each epoch from epoch 9": {"lr_decay_start": 8},
    "halved each epoch from epoch 13": {"lr_decay_start": 12},
}
"""Each setting's changes to the medium profile's sizes (epochs counted from 1 in the names, from 0 in
``lr_decay_start``)."""


def learning_curve(changes: dict[str, Any], epochs: int) -> dict:
    """Dev BLEU after each epoch and the CPU seconds of training and dev decoding so far, with the medium
    sizes changed by ``changes``."""
    sizes = dataclasses.replace(SIZES["medium"], epochs=epochs, **changes)
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
    return {"changes": changes, "dev_bleu": [e["dev"] for e in history.epochs],
            "cpu_seconds": [round(c, 1) for c in cpu]}


def epochs_to_reach(curve: dict, bleu: float) -> int | None:
    """The first epoch (counting from 1) whose dev BLEU is at least ``bleu``."""
    return next((epoch for epoch, b in enumerate(curve["dev_bleu"], start=1) if b >= bleu), None)


def summary(curves: dict[str, dict]) -> dict[str, Any]:
    """The best dev BLEU of :data:`AFTER` within the medium profile's epochs; for each curve its own best, the epochs and CPU seconds it needs
    to reach that target, and how much its last epoch changed the dev BLEU; the ratio of the epochs of
    :data:`AFTER` to those of :data:`BEFORE`."""
    target = max(curves[AFTER]["dev_bleu"][:SIZES["medium"].epochs]) if AFTER in curves else None
    rows = {}
    for name, curve in curves.items():
        epochs = epochs_to_reach(curve, target) if target is not None else None
        rows[name] = {"best_dev_bleu": max(curve["dev_bleu"]), "epochs_to_target": epochs,
                      "cpu_seconds_to_target": curve["cpu_seconds"][epochs - 1] if epochs else None,
                      "last_epoch_change": curve["dev_bleu"][-1] - curve["dev_bleu"][-2] if len(curve["dev_bleu"]) > 1
                      else None}
    before, after = (rows.get(name, {}).get("epochs_to_target") for name in (BEFORE, AFTER))
    return {"target_dev_bleu": target, "settings": rows,
            "epoch_ratio": after / before if before and after else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--only", choices=sorted(SETTINGS), help="train this setting only; keep the others' stored curves")
    parser.add_argument("--summary-only", action="store_true", help="train nothing; summarise the stored curves")
    args = parser.parse_args()
    torch.set_num_threads(1)
    trained = {}
    for name in [] if args.summary_only else [args.only] if args.only else SETTINGS:
        trained[name] = learning_curve(SETTINGS[name], args.epochs)
        trained[name].update(command=f"python benchmarks/bench_nmt_training.py --epochs {args.epochs}"
                                    + (f" --only '{name}'" if args.only else ""),
                            git_commit=_git_commit(), cpu=cpu_backend(),
                            date_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    path = Path(results_dir()) / "nmt_training_speed.json"  # read now: another setting may have finished meanwhile
    stored = json.loads(path.read_text()) if (args.only or args.summary_only) and path.exists() else {}
    curves = {**{name: curve for name, curve in stored.get("curves", {}).items() if name in SETTINGS}, **trained}
    payload = {"benchmark": "nmt_training_speed", "curves": curves, **summary(curves)}
    path.write_text(json.dumps(payload, indent=1) + "\n")
    print(json.dumps(summary(curves), indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
