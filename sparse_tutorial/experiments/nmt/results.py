"""``nmt.json`` from the run records of experiment ``nmt`` (:mod:`~sparse_tutorial.experiments.nmt`).

Table I per seed and averaged, how each system converged (dev BLEU per epoch, the best epoch, whether the
last epochs still gained), what each intervention did to its own mechanism measure (:data:`~sparse_tutorial.
experiments.nmt.claims.MECHANISMS`, with seed-and-verse intervals), our own unjudged comparisons
(:data:`~sparse_tutorial.experiments.nmt.claims.EXPLORATORY`), the λ sweep, training speed, examples,
heatmaps, and in ``checks`` the headline numbers and every claim judged by the inference standard
(:mod:`~sparse_tutorial.experiments.nmt.claims`). Nothing here changes
what a run computes, so editing this module never makes stored runs stale.
"""
from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any, Sequence

import numpy as np

from sparse_tutorial.stats.inference import (
    MIN_SEEDS, Evidence, bleu_score, bleu_statistics, compare, ratio_score)
from sparse_tutorial.experiments.nmt import design
from sparse_tutorial.experiments.nmt.claims import CLAIMS, EXPLORATORY, MECHANISMS, exploratory_table, judge, mechanism_table
from sparse_tutorial.experiments.nmt.data import TranslationData, translation_corpus
from sparse_tutorial.experiments.nmt.training import SIZES, SYSTEMS, Sizes, System
from sparse_tutorial.runs.runner import mean_std, rounded
from sparse_tutorial.runs.sweep import Run

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


def _schedule(sizes: Sizes) -> str:
    """How the learning rate changes, for the protocol line ("" when constant)."""
    if sizes.lr_decay_start is None:
        return ""
    return f", the learning rate halved each epoch from epoch {sizes.lr_decay_start + 1}"


def converged(dev_bleu: Sequence[float]) -> dict[str, Any]:
    """``{"best_epoch", "epochs", "last_gain", "plateau"}``: the last epoch's dev BLEU gain over the best
    epoch before it; ``plateau`` when below :data:`PLATEAU_BLEU`."""
    best = int(np.argmax(dev_bleu))
    gain = dev_bleu[-1] - max(dev_bleu[:-1]) if len(dev_bleu) > 1 else float("nan")
    return {"best_epoch": best, "epochs": len(dev_bleu), "last_gain": gain,
            "plateau": bool(len(dev_bleu) > 1 and gain < PLATEAU_BLEU)}


def _stack(runs: list[dict[str, Any]], numerator: str, denominator: str) -> np.ndarray:
    """``(seeds, verses, 2)`` of a per-verse ratio's parts from each seed's ``verses``."""
    return np.stack([np.stack([r["verses"][numerator], r["verses"][denominator]], axis=-1) for r in runs])


def assemble(profile: str, seeds: int, runs: Sequence[Run], results: Sequence[dict[str, Any]],
             data: TranslationData | None = None, n_examples: int = 8) -> dict[str, Any]:
    """``nmt.json`` from the results of the grid's runs (see the module docstring)."""
    sizes = SIZES[profile]
    data = data if data is not None else translation_corpus(sizes.corpus)
    systems: dict[str, list[dict[str, Any]]] = {}
    seeds_of: dict[str, list[int]] = {}
    single: dict[str, dict[str, Any]] = {}
    fresh: dict[str, dict[int, dict[str, Any]]] = {}
    for run, result in sorted(zip(runs, results), key=lambda pair: pair[0].get("seed", 0)):
        if run.kind == "system" and run["seed"] >= seeds:  # the confirmatory design's fresh seeds
            arm = arm_name(System(**{f.name: run[f.name] for f in fields(System)}))
            fresh.setdefault(arm, {})[run["seed"]] = {**result["metrics"], "dev_entropy": result["epochs"]["dev_entropy"]}
        elif run.kind == "system":
            arm = arm_name(System(**{f.name: run[f.name] for f in fields(System)}))
            systems.setdefault(arm, []).append(result)
            seeds_of.setdefault(arm, []).append(run["seed"])
        else:
            single[run.kind] = result
    references = [p.references for p in data.test]
    bleu_stats = {arm: np.stack([bleu_statistics(r["outputs"], references) for r in seeded])
                  for arm, seeded in systems.items()}

    def evidence(a: str, b: str, measure: str) -> Evidence | None:
        if a not in systems or b not in systems:
            return None
        if measure == "bleu":
            return compare(bleu_stats[a], bleu_stats[b], score=bleu_score, what="BLEU")
        parts = VERSE_MEASURES[measure]
        return compare(_stack(systems[a], *parts), _stack(systems[b], *parts), score=ratio_score, what=measure)

    wanted = {(c.a, c.b, c.measure) for c in CLAIMS.values()}
    wanted |= {(arm, control, measure) for arm, (measure, control, _) in MECHANISMS.items()}
    wanted |= set(EXPLORATORY.values())
    found = {key: e for key in wanted if (e := evidence(*key)) is not None}
    mechanisms = mechanism_table(found)

    per_seed = {arm: [{"seed": seed, **r["metrics"], **converged(r["epochs"]["dev_bleu"])}
                      for seed, r in zip(seeds_of[arm], seeded)] for arm, seeded in systems.items()}
    table = {arm: {"seeds": len(rows), **{key: mean_std([row[key] for row in rows])
                                          for key in ("bleu", "chrf", "entropy_per_token", "zero_share", "max_weight",
                                                      "sink_share_first", "sink_share_last", "repeated_bigrams",
                                                      "best_epoch", "epochs", "tokens_per_second")}}
             for arm, rows in per_seed.items()}
    results: dict[str, Any] = {
        "protocol": f"every system trained from scratch with the same recipe, data and budget ({sizes.epochs} "
                    f"epochs{_schedule(sizes)}, the best dev-BLEU epoch kept), as in Zhang et al.",
        "corpus": data.corpus, "sizes": asdict(sizes),
        "systems": {arm: asdict(SYSTEMS[arm]) for arm in systems if arm in SYSTEMS},
        "vocab": {"source": len(data.src_vocab), "target": len(data.tgt_vocab)},
        "table": table, "per_seed": per_seed,
        "training": {arm: [r["epochs"] for r in seeded] for arm, seeded in systems.items()},
        "mechanism": mechanisms,
        "exploratory": exploratory_table(found),
        "examples": [{"source": data.detokenize(pair.source), "reference": pair.references[0],
                      **{arm: seeded[0]["outputs"][k] for arm, seeded in systems.items() if arm in SYSTEMS}}
                     for k, pair in enumerate(data.test[:n_examples])],
        "heatmaps": {arm: seeded[0]["heatmaps"] for arm, seeded in systems.items()},
        "training_speed": single.get("speed"),
    }
    results["checks"] = checks(results, seeds, len(data.test), systems, judge(found, mechanisms))
    training = results["training"]
    results = rounded(results)
    if profile == design.PROFILE:  # unrounded: a chapter rounds each of its numbers once, when it prints it
        results["checks"]["design"] = confirmatory(per_seed, training, fresh)
    return results


def confirmatory(pilot: dict[str, list[dict[str, Any]]], training: dict[str, list[dict[str, Any]]],
                 fresh: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    """The confirmatory design (:mod:`~sparse_tutorial.experiments.nmt.design`) and what its fresh seeds say
    (:meth:`~sparse_tutorial.stats.design.Design.section` of the per-seed BLEU differences), with the collapse
    of the penalised arms over the pilot's and the fresh seeds, each kept apart: the committed rule's rates
    (``collapse``), every penalised run's own measures (``collapse_runs``), and a reading by BLEU defined after
    the data (``collapse_by_bleu``, :func:`collapse_by_bleu`)."""
    every = {arm: {row["seed"]: row["bleu"] for row in rows} for arm, rows in pilot.items()}
    for arm, runs in fresh.items():
        every.setdefault(arm, {}).update({seed: metrics["bleu"] for seed, metrics in runs.items()})
    differences = {claim: {seed: every[c.a][seed] - every[c.b][seed]
                           for seed in sorted(set(every.get(c.a, {})) & set(every.get(c.b, {})))}
                   for claim, c in design.DESIGN.items()}
    section = design.CONFIRMATORY.section(differences, {arm: sorted(runs) for arm, runs in fresh.items()},
                                          design.__file__)
    penalised = {"pilot": {arm: [{**row, "dev_entropy": epochs["dev_entropy"]} for row, epochs in zip(rows, training[arm])]
                           for arm, rows in pilot.items() if _penalised(arm)},
                 "fresh": {arm: [{"seed": seed, **metrics} for seed, metrics in sorted(runs.items())]
                           for arm, runs in fresh.items() if _penalised(arm)}}
    runs = [{"seeds": kind, "arm": arm, "seed": row["seed"], "entropy_per_token": row["entropy_per_token"],
             "bleu": row["bleu"], "spread_epoch": design.spread_epoch(row["dev_entropy"]),
             "collapsed": design.collapsed(row["entropy_per_token"])}
            for kind, arms in penalised.items() for arm, rows in arms.items() for row in rows]
    return {**section, "sd_for_power": design.SD_FOR_POWER, "collapse_entropy": design.COLLAPSE_ENTROPY,
            "collapse": {kind: design.collapse_rates({arm: [row["entropy_per_token"] for row in rows]
                                                      for arm, rows in arms.items()})
                         for kind, arms in penalised.items()},
            "collapse_runs": runs, "collapse_by_bleu": collapse_by_bleu(runs)}


def _penalised(arm: str) -> bool:
    """Whether ``arm`` trains with an entropy penalty: a penalised system of the design, or a λ of the sweep."""
    return arm in design.PENALISED or arm.startswith("λ =")


def collapse_by_bleu(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A second reading of collapse, by BLEU, defined after the fresh seeds were seen (so it judges nothing):
    a penalised run counts as collapsed when its test BLEU is at most that of the best pilot run the committed
    rule calls collapsed (the pilot's collapsed runs span 8.6-18.5 BLEU). ``{"defined_after_the_data", "rule",
    "bleu_ceiling", "pilot": rates, "fresh": rates}``, each rate ``{collapsed, seeds, share}`` per arm."""
    ceiling = max((run["bleu"] for run in runs if run["seeds"] == "pilot" and run["collapsed"]), default=None)
    reading: dict[str, Any] = {"defined_after_the_data": True, "bleu_ceiling": ceiling,
                               "rule": "test BLEU at most the best BLEU of a pilot run the committed rule calls "
                                       "collapsed"}
    for kind in ("pilot", "fresh"):
        counted: dict[str, list[bool]] = {}
        for run in runs:
            if run["seeds"] == kind:
                counted.setdefault(run["arm"], []).append(ceiling is not None and run["bleu"] <= ceiling)
        reading[kind] = {arm: {"collapsed": sum(calls), "seeds": len(calls), "share": sum(calls) / len(calls)}
                         for arm, calls in counted.items()}
    return reading


def checks(results: dict[str, Any], seeds: int, n_test: int, systems: dict[str, list[dict[str, Any]]],
           claims: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The headline numbers of ``nmt.json`` that the chapters and outside checks read (issue 29's contract;
    the alignment numbers are in ``alignment.json``)."""
    table = results["table"]
    nmt = results["per_seed"].get("NMT", [])
    return {"protocol": "from scratch", "seeds": seeds, "n_test": n_test,
            "seeds_per_system": {arm: len(seeded) for arm, seeded in systems.items()},
            "judged_systems": sorted(arm for arm, seeded in systems.items() if len(seeded) >= MIN_SEEDS),
            "baseline_bleu_mean": table["NMT"]["bleu"]["mean"] if "NMT" in table else None,
            "shuffled_source_bleu_mean": mean_std([m["bleu_shuffled_source"] for m in nmt])["mean"] if nmt else None,
            "baseline_plateau": all(m["plateau"] for m in nmt) if nmt else None,
            "mechanism": {arm: {k: row[k] for k in ("measure", "effect", "ci95", "acted")}
                          for arm, row in results["mechanism"].items()},
            "claims": claims}
