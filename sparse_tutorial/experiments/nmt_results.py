"""``nmt.json`` from the run records of experiment ``nmt`` (:mod:`~sparse_tutorial.experiments.nmt`).

Table I per seed and averaged, how each system converged (dev BLEU per epoch, the best epoch, whether the
last epochs still gained), what each intervention did to its own mechanism measure (:data:`~sparse_tutorial.
experiments.nmt_claims.MECHANISMS`, with seed-and-verse intervals), the λ sweep, the alignment scores with
their controls, training speed, examples, heatmaps, and in ``checks`` the headline numbers and every claim
judged by the inference standard (:mod:`~sparse_tutorial.experiments.nmt_claims`). Nothing here changes
what a run computes, so editing this module never makes stored runs stale.
"""
from __future__ import annotations

import math
from dataclasses import asdict, fields
from typing import Any, Sequence

import numpy as np

from sparse_tutorial.experiments.inference import Evidence, aer_score, bleu_score, bleu_statistics, compare, ratio_score
from sparse_tutorial.experiments.nmt_claims import (
    ALIGNMENT_CLAIMS, MECHANISMS, TRANSLATION_CLAIMS, alignment_controls, judge, mechanism_table,
)
from sparse_tutorial.experiments.nmt_data import Alignment, TranslationData, corpora
from sparse_tutorial.experiments.nmt_training import SIZES, SYSTEMS, System
from sparse_tutorial.experiments.runner import mean_std, rounded
from sparse_tutorial.experiments.sweep import Run

PLATEAU_BLEU = 0.5
"""A run has converged when its last epoch gained less than this much dev BLEU over the best before it."""

VERSE_MEASURES = {"entropy": ("entropy", "tokens"), "max_weight": ("max_weight", "tokens"),
                  "zero_share": ("zeros", "cells"), "sink_share_first": ("first", "tokens"),
                  "repeated_bigrams": ("repeated_bigrams", "bigrams")}
"""Mechanism measures as ratios of per-verse sums stored by each run (``verses``)."""


def arm_name(system: System) -> str:
    """The row name of ``system``: its name in :data:`SYSTEMS`, else ``"λ = x"`` for the λ sweep."""
    named = [name for name, known in SYSTEMS.items() if known == system]
    return named[0] if named else f"λ = {system.penalty_weight:g}"


def converged(dev_bleu: Sequence[float]) -> dict[str, Any]:
    """``{"best_epoch", "epochs", "last_gain", "plateau"}``: the last epoch's dev BLEU gain over the best
    epoch before it (≤ 0 once early stopping has waited its patience); ``plateau`` when below :data:`PLATEAU_BLEU`."""
    best = int(np.argmax(dev_bleu))
    gain = dev_bleu[-1] - max(dev_bleu[:-1]) if len(dev_bleu) > 1 else float("nan")
    return {"best_epoch": best, "epochs": len(dev_bleu), "last_gain": gain,
            "plateau": bool(len(dev_bleu) > 1 and gain < PLATEAU_BLEU)}


def _stack(runs: list[dict[str, Any]], numerator: str, denominator: str) -> np.ndarray:
    """``(seeds, verses, 2)`` of a per-verse ratio's parts from each seed's ``verses``."""
    return np.stack([np.stack([r["verses"][numerator], r["verses"][denominator]], axis=-1) for r in runs])


def assemble(profile: str, seeds: int, runs: Sequence[Run], results: Sequence[dict[str, Any]],
             data: TranslationData | None = None, alignment: Alignment | None = None,
             n_examples: int = 8) -> dict[str, Any]:
    """``nmt.json`` from the results of the grid's runs (see the module docstring)."""
    sizes = SIZES[profile]
    if data is None or (alignment is None and sizes.alignment_systems):
        loaded = corpora(sizes.corpus, bool(sizes.alignment_systems))
        data, alignment = data or loaded[0], alignment or loaded[1]
    systems: dict[str, list[dict[str, Any]]] = {}
    aligners: dict[str, list[dict[str, Any]]] = {}
    single: dict[str, dict[str, Any]] = {}
    for run, result in sorted(zip(runs, results), key=lambda pair: pair[0].get("seed", 0)):
        if run.kind == "system":
            systems.setdefault(arm_name(System(**{f.name: run[f.name] for f in fields(System)})), []).append(result)
        elif run.kind == "alignment":
            aligners.setdefault(run["system"], []).append(result)
        else:
            single[run.kind] = result
    references = [p.references for p in data.test]
    bleu_stats = {arm: np.stack([bleu_statistics(r["outputs"], references) for r in seeded])
                  for arm, seeded in systems.items()}

    def evidence(a: str, b: str, measure: str) -> Evidence | None:
        if measure == "aer":  # per-verse counts exist where the profile holds out dev verses for the aligners
            if a not in aligners or b not in aligners or not all("verses" in r for r in aligners[a] + aligners[b]):
                return None
            stacked = [np.stack([np.stack([r["verses"][k] for k in ("sure_hits", "possible_hits", "links", "sure")], axis=-1)
                                 for r in group]) for group in (aligners[a], aligners[b])]
            return compare(*stacked, score=aer_score, what="AER")
        if a not in systems or b not in systems:
            return None
        if measure == "bleu":
            return compare(bleu_stats[a], bleu_stats[b], score=bleu_score, what="BLEU")
        parts = VERSE_MEASURES[measure]
        return compare(_stack(systems[a], *parts), _stack(systems[b], *parts), score=ratio_score, what=measure)

    wanted = {(c.a, c.b, c.measure) for c in (*TRANSLATION_CLAIMS.values(), *ALIGNMENT_CLAIMS.values())}
    wanted |= {(arm, control, measure) for arm, (measure, control, _) in MECHANISMS.items()}
    found = {key: e for key in wanted if (e := evidence(*key)) is not None}
    mechanisms = mechanism_table(found)

    per_seed = {arm: [{**r["metrics"], **converged(r["epochs"]["dev_bleu"])} for r in seeded]
                for arm, seeded in systems.items()}
    table = {arm: {"seeds": len(rows), **{key: mean_std([row[key] for row in rows])
                                          for key in ("bleu", "chrf", "entropy_per_token", "zero_share", "max_weight",
                                                      "sink_share_first", "sink_share_last", "repeated_bigrams",
                                                      "best_epoch", "epochs", "tokens_per_second")}}
             for arm, rows in per_seed.items()}
    results: dict[str, Any] = {
        "protocol": f"every system trained from scratch with the same recipe, data and budget (up to {sizes.epochs} "
                    f"epochs, early stopping on dev BLEU with patience {sizes.patience}, the best dev epoch kept), "
                    f"as in Zhang et al.",
        "corpus": data.corpus, "sizes": asdict(sizes),
        "systems": {arm: asdict(SYSTEMS[arm]) for arm in systems if arm in SYSTEMS},
        "vocab": {"source": len(data.src_vocab), "target": len(data.tgt_vocab)},
        "table": table, "per_seed": per_seed,
        "training": {arm: [r["epochs"] for r in seeded] for arm, seeded in systems.items()},
        "mechanism": mechanisms,
        "examples": [{"source": data.detokenize(pair.source), "reference": pair.references[0],
                      **{arm: seeded[0]["outputs"][k] for arm, seeded in systems.items() if arm in SYSTEMS}}
                     for k, pair in enumerate(data.test[:n_examples])],
        "heatmaps": {arm: seeded[0]["heatmaps"] for arm, seeded in systems.items()},
        "training_speed": single.get("speed"),
    }
    controls = None
    if alignment is not None and aligners:
        train_pairs, test_pairs, align_corpus = alignment
        uniform = (sum(len(p.target) * math.log(len(p.source)) for p in test_pairs)
                   / sum(len(p.target) for p in test_pairs))  # entropy per target word of uniform attention
        controls = (alignment_controls(aligners, uniform)
                    if all("shuffled_source_nll" in r for v in aligners.values() for r in v) else None)
        keys = [k for k in ("aer", "saer", "argmax_agreement", "entropy_per_token", "sink_share_first", "test_nll",
                            "shuffled_source_nll", "best_epoch", "dev_nll") if k in next(iter(aligners.values()))[0]]
        results["alignment"] = {
            "corpus": {**align_corpus, "train_pairs": len(train_pairs) - sizes.corpus.n_align_dev,
                       "dev_pairs": sizes.corpus.n_align_dev, "test_pairs": len(test_pairs)},
            "uniform_entropy_per_token": uniform, "controls": controls,
            "per_seed": {n: [{k: r[k] for k in keys} for r in v] for n, v in aligners.items()},
            "scores": {n: {k: mean_std([r[k] for r in v]) for k in keys if k != "dev_nll"} for n, v in aligners.items()},
            "baselines": single.get("alignment-baselines")}
    results["checks"] = checks(results, seeds, len(data.test), systems, aligners, controls,
                               judge(found, mechanisms, controls))
    return rounded(results)


def checks(results: dict[str, Any], seeds: int, n_test: int, systems: dict[str, list[dict[str, Any]]],
           aligners: dict[str, list[dict[str, Any]]], controls: dict[str, Any] | None,
           claims: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The headline numbers of ``nmt.json`` that the chapters and outside checks read (issue 29's contract)."""
    table, alignment = results["table"], results.get("alignment", {})
    baselines = alignment.get("baselines") or {}
    nmt = results["per_seed"].get("NMT", [])
    return {"protocol": "from scratch", "seeds": seeds, "n_test": n_test,
            "seeds_per_system": {arm: len(seeded) for arm, seeded in systems.items()},
            "judged_systems": sorted(arm for arm, seeded in systems.items() if len(seeded) >= 3),
            "baseline_bleu_mean": table["NMT"]["bleu"]["mean"] if "NMT" in table else None,
            "shuffled_source_bleu_mean": mean_std([m["bleu_shuffled_source"] for m in nmt])["mean"] if nmt else None,
            "baseline_plateau": all(m["plateau"] for m in nmt) if nmt else None,
            "mechanism": {arm: {k: row[k] for k in ("measure", "effect", "ci95", "acted")}
                          for arm, row in results["mechanism"].items()},
            "aer": {n: row["aer"]["mean"] for n, row in alignment.get("scores", {}).items()} or None,
            "aer_seeds": min((len(v) for v in aligners.values()), default=0),
            "aer_diagonal": baselines.get("diagonal"), "aer_ibm1": baselines.get("ibm1"),
            "alignment_controls_pass": all(c["passes"] for c in controls.values()) if controls else None,
            "claims": claims}
