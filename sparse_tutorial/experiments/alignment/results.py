"""``alignment.json`` from the run records of experiment ``alignment``
(:mod:`~sparse_tutorial.experiments.alignment`).

Table III per seed and averaged (AER, SAER, argmax agreement; AER and SAER with their seeds' 95 %
interval), the controls each aligner must pass (reading its source, leaving uniform attention), the
aligners without attention, the attention of a few test verses next to their gold links, and in
``checks`` the headline numbers and the claims judged by the inference standard
(:mod:`~sparse_tutorial.experiments.alignment.claims`). Nothing here changes what a run computes, so
editing this module never makes stored runs stale.
"""
from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, Sequence

import numpy as np

from sparse_tutorial.experiments.alignment.claims import CLAIMS, alignment_controls, judge
from sparse_tutorial.experiments.alignment.data import Alignment, alignment_corpus
from sparse_tutorial.experiments.alignment.training import EXAMPLES
from sparse_tutorial.experiments.nmt.data import middling_verses
from sparse_tutorial.stats.inference import Evidence, aer_score, compare, seed_interval
from sparse_tutorial.runs.runner import mean_std, rounded
from sparse_tutorial.runs.sweep import Run

SCORES = ("aer", "saer", "argmax_agreement", "entropy_per_token", "sink_share_first", "sink_share_last", "test_nll",
          "shuffled_source_nll", "best_epoch")
"""The per-seed numbers of each aligner that the file keeps (with ``dev_nll`` per epoch)."""
INTERVALS = ("aer", "saer")
"""The scores kept with their 95 % interval over seeds (``ci95``): Table III's columns."""
COUNTS = ("sure_hits", "possible_hits", "links", "sure")


def aer_evidence(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> Evidence:
    """AER of aligners ``a`` against ``b`` (their seeds' runs), verses resampled within seeds."""
    stacked = [np.stack([np.stack([r["verses"][k] for k in COUNTS], axis=-1) for r in group]) for group in (a, b)]
    return compare(*stacked, score=aer_score, what="AER")


def mean_log_source_length(pairs: Sequence[Any]) -> float:
    """Per target word, the log of its verse's source length: the entropy (nats) of uniform attention."""
    return sum(len(p.target) * math.log(len(p.source)) for p in pairs) / sum(len(p.target) for p in pairs)


def assemble(sizes: Any, seeds: int, runs: Sequence[Run], results: Sequence[dict[str, Any]],
             alignment: Alignment | None = None) -> dict[str, Any]:
    """``alignment.json`` from the results of the grid's runs at ``sizes`` (see the module docstring)."""
    alignment = alignment if alignment is not None else alignment_corpus(sizes.corpus)
    test_pairs = alignment.test
    found: dict[str, list[dict[str, Any]]] = {}
    baselines = None
    for run, result in sorted(zip(runs, results), key=lambda pair: pair[0].get("seed", 0)):
        if run.kind == "aligner":
            found.setdefault(run["system"], []).append({**result, "seed": run["seed"]})
        else:
            baselines = result
    aligners = {name: found[name] for name in sizes.systems if name in found}
    uniform = mean_log_source_length(test_pairs)
    controls = alignment_controls(aligners, uniform)
    evidence = {(c.a, c.b): aer_evidence(aligners[c.a], aligners[c.b])
                for c in CLAIMS.values() if c.a in aligners and c.b in aligners}
    scores = {name: {k: mean_std([r[k] for r in seeded]) for k in SCORES} for name, seeded in aligners.items()}
    for name, seeded in aligners.items():
        for k in INTERVALS:
            scores[name][k]["ci95"] = seed_interval([r[k] for r in seeded])
    nmt_aer = scores["NMT"]["aer"]["mean"] if "NMT" in scores else None
    shown = [test_pairs[i] for i in middling_verses(test_pairs, EXAMPLES)]
    return rounded({
        "corpus": {**alignment.provenance, "train_pairs": len(alignment.train), "dev_pairs": len(alignment.dev),
                   "test_pairs": len(test_pairs)},
        "sizes": asdict(sizes),
        "uniform_entropy_per_token": uniform,
        "controls": controls,
        "per_seed": {name: [{"seed": r["seed"], **{k: r[k] for k in SCORES}, "dev_nll": r["dev_nll"]} for r in seeded]
                     for name, seeded in aligners.items()},
        "scores": scores,
        "baselines": baselines,
        "examples": [{"source": p.source, "target": p.target, "sure": sorted(p.sure), "possible": sorted(p.possible),
                      "attention": {name: seeded[0]["examples"][k] for name, seeded in aligners.items()}}
                     for k, p in enumerate(shown)],
        "checks": {
            "seeds": seeds, "seeds_per_system": {name: len(seeded) for name, seeded in aligners.items()},
            "aer": {name: row["aer"]["mean"] for name, row in scores.items()},
            "aer_seeds": min((len(v) for v in aligners.values()), default=0),
            "aer_diagonal": (baselines or {}).get("diagonal"), "aer_ibm1": (baselines or {}).get("ibm1"),
            "nmt_below_diagonal": None if nmt_aer is None or baselines is None else nmt_aer < baselines["diagonal"],
            "alignment_controls_pass": all(c["passes"] for c in controls.values()) if controls else None,
            "claims": judge(evidence, controls),
        },
    })
