"""Experiment ``nmt``: Zhang et al. (2019) §VI-A / §VII-A, Tables I-IV and Fig. 5, explained in chapters 8-9.

Bible German→English translation (:mod:`~sparse_tutorial.experiments.nmt_data`: both German versions as
training sources, joint BPE pieces, three English references) with the attentional LSTM encoder-decoder of
:mod:`sparse_tutorial.models.seq2seq`, in the systems of Table I
(:mod:`~sparse_tutorial.experiments.nmt_training`, which also holds the training protocol: one baseline
per seed, every system fine-tuned from it):

=================  ==========================  ========  =====================
system             attention projection        coverage  regularizer (λ)
=================  ==========================  ========  =====================
NMT                softmax                     --        --
+Coverage          softmax                     neural    --
+Temp (τ)          softmax(e / τ), τ = 0.8…0.1 --        --
+Gumbel            Gumbel-softmax (τ = 1)      --        --
+Sparsemax         sparsemax                   --        --
+L∞                softmax                     --        −L∞, λ = 0.01
+Entropy           softmax                     --        entropy, λ = 0.01
+Cov+Ent           softmax                     neural    entropy, λ = 0.01
=================  ==========================  ========  =====================

plus the λ sweep of +Entropy (Table IV), word alignment (Table III,
:mod:`~sparse_tutorial.experiments.nmt_alignment`) and the claims judged on all of it
(:mod:`~sparse_tutorial.experiments.nmt_claims`). This module is the experiment's grid of runs, what each
run computes, and how ``nmt.json`` is assembled from them.

``python -m sparse_tutorial.experiments nmt --profile medium --seeds 3 --workers 2`` writes
``book/results/nmt.json``.
"""
from __future__ import annotations

import functools
import math
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from sparse_tutorial.data.cache import cache_dir
from sparse_tutorial.experiments.nmt_alignment import Alignment, baseline_alignment_scores, run_alignment
from sparse_tutorial.experiments.nmt_claims import bleu_test, judge
from sparse_tutorial.experiments.nmt_data import (
    CorpusSizes, Pair, TranslationData, load_alignment_data, load_translation_data,
)
from sparse_tutorial.experiments.nmt_training import (
    HEADLINE, SIZES, SYSTEMS, Sizes, System, attention_measures, baseline_weights, build_model, loss_for,
    run_system, training_speed,
)
from sparse_tutorial.experiments.runner import mean_std, rounded
from sparse_tutorial.experiments.sweep import Run, run_sweep
from sparse_tutorial.metrics import paired_bootstrap
from sparse_tutorial.profiles import default_device

"""``quick``: the chapters' own run; ``medium``: the stored run, sized for two CPU cores; ``full``: a GPU."""


# ----------------------------------------------------------------------------------------- the experiment
# A grid of independent runs (sparse_tutorial.experiments.sweep): one baseline per seed, every system × seed
# fine-tuned from it, the λ sweep, the alignment models and their baselines, and one timing run; `assemble`
# builds nmt.json from their results.
def _system_run(profile: str, system: System, seed: int) -> Run:
    """The run fine-tuning ``system`` with ``seed`` (named by its fields, so the λ sweep's +Entropy at the
    paper's λ is the same run as Table I's)."""
    return Run.of("system", profile=profile, seed=seed, **asdict(system))


def _seeds_of(name: str, sizes: Sizes, seeds: int) -> range:
    return range(seeds if name in HEADLINE else min(seeds, sizes.sweep_seeds))


def grid(profile: str, seeds: int) -> list[Run]:
    """Every run of the experiment at ``profile`` with seeds ``0 … seeds − 1``: the baselines, the systems
    and the λ sweep (every seed for :data:`HEADLINE` systems, ``sweep_seeds`` for the others), the alignment
    models, the alignments without attention, and the timing run. Loads (and so checks) both corpora first."""
    _corpora(profile)
    sizes = SIZES[profile]
    sweep = range(min(seeds, sizes.sweep_seeds))
    systems = ([_system_run(profile, SYSTEMS[name], seed) for seed in range(seeds) for name in sizes.systems
                if seed in _seeds_of(name, sizes, seeds)]
               + [_system_run(profile, System(penalty="entropy", penalty_weight=lam), seed)
                  for lam in sizes.penalty_weights for seed in sweep])
    independent = ([Run.of("alignment", profile=profile, system=name, seed=seed)
                    for name in sizes.alignment_systems for seed in _seeds_of(name, sizes, seeds)]
                   + ([Run.of("alignment-baselines", profile=profile)] if sizes.alignment_systems else [])
                   + [Run.of("speed", profile=profile)])
    # order for parallel workers: the runs of the last seed wait for its baseline, so the runs that need
    # no baseline go before them
    last = [run for run in systems if run["seed"] == seeds - 1 and seeds > 1]
    return ([Run.of("baseline", profile=profile, seed=seed) for seed in range(seeds)]
            + [run for run in systems if run not in last] + independent + last)


def _corpora(profile: str, data: TranslationData | None = None, alignment: Alignment | None = None
             ) -> tuple[TranslationData, Alignment | None]:
    """The corpora of ``profile``, ``data`` and ``alignment`` where given; the others are loaded (once per
    process), so that a corpus that is not fetched fails before any training."""
    corpus = SIZES[profile].corpus
    data = data if data is not None else _loaded(load_translation_data, corpus, cache_dir())
    if alignment is None and SIZES[profile].alignment_systems:
        alignment = _loaded(load_alignment_data, corpus, cache_dir())
    return data, alignment


@functools.lru_cache(maxsize=None)
def _loaded(load: Callable[[CorpusSizes], Any], sizes: CorpusSizes, cache: Path) -> Any:
    """``load(sizes)``, once per process for each ``sizes`` and data cache folder."""
    return load(sizes)


def execute(run: Run, data: TranslationData | None = None, alignment: Alignment | None = None,
            device: torch.device | str | None = None, sizes: Sizes | None = None) -> dict[str, Any]:
    """One run of :func:`grid`; ``data``, ``alignment``, ``device`` and ``sizes`` override the corpora,
    :func:`~sparse_tutorial.profiles.default_device` and the profile's :data:`SIZES` (tests, the chapter).

    Returns:
        ``baseline``: the dev BLEU after each epoch with the training seconds so far; ``system``:
        ``metrics``, the test ``outputs`` (detokenized), the fine-tuning ``step_nll`` and the attention
        ``heatmap`` of one test verse; ``alignment``: AER, SAER, argmax agreement and
        :func:`attention_measures`; ``alignment-baselines``: :func:`baseline_alignment_scores`; ``speed``:
        :func:`training_speed` of every system of the profile.
    """
    profile = run["profile"]
    sizes = sizes or SIZES[profile]
    device = torch.device(device) if device is not None else default_device()
    if run.kind in ("alignment", "alignment-baselines"):
        train_pairs, test_pairs, _ = _corpora(profile, data, alignment)[1]
        if run.kind == "alignment-baselines":
            return baseline_alignment_scores(train_pairs, test_pairs)
        name = run["system"]
        scores, attention = run_alignment(
            lambda src_vocab, tgt_vocab: build_model(SYSTEMS[name], sizes, src_vocab, tgt_vocab),
            loss_for(SYSTEMS[name]), train_pairs, test_pairs, sizes.align_epochs, sizes.align_batch_tokens, sizes.learning_rate,
            run["seed"], device)
        return {**scores, **attention_measures(attention)}
    data = data if data is not None else _corpora(profile)[0]
    if run.kind == "speed":
        return training_speed(data, sizes, sizes.systems, device)
    weights, history = baseline_weights(profile, run["seed"], data, device, sizes)
    if run.kind == "baseline":
        seconds = np.cumsum([e["seconds"] for e in history["epochs"]]).tolist()
        return {"dev_bleu": [e.get("dev") for e in history["epochs"]], "train_seconds": seconds,
                "loss": [e["loss"] for e in history["epochs"]], "best_epoch": history["best_epoch"]}
    system = System(**{field.name: run[field.name] for field in fields(System)})
    result = run_system(system, weights, data, sizes, run["seed"], device, controls=system == SYSTEMS["NMT"])
    index = heatmap_index(data.test)
    return {"metrics": result.metrics, "outputs": [data.detokenize(o) for o in result.outputs],
            "step_nll": [s["nll"] for s in result.history.steps],
            "heatmap": {"source": data.test[index].source, "output": result.outputs[index],
                        "attention": result.attention[index].tolist()}}


def assemble(profile: str, seeds: int, runs: Sequence[Run], results: Sequence[dict[str, Any]],
             data: TranslationData | None = None, alignment: Alignment | None = None,
             n_examples: int = 8) -> dict[str, Any]:
    """``nmt.json`` from the results of :func:`grid`'s runs: Table I per seed and averaged, paired bootstrap
    p-values against the baseline of the same seed, the baselines' dev BLEU against training time, the λ
    sweep, alignment scores, training speed, the seed-0 examples, heatmaps and fine-tuning curves, and in
    ``checks`` the headline numbers and every claim's verdict (:mod:`~sparse_tutorial.experiments.nmt_claims`)."""
    sizes = SIZES[profile]
    data, alignment = _corpora(profile, data, alignment)
    of = dict(zip(runs, results))

    def system(name_or_system: str | System, seed: int) -> dict[str, Any]:
        chosen = SYSTEMS[name_or_system] if isinstance(name_or_system, str) else name_or_system
        return of[_system_run(profile, chosen, seed)]

    per_seed = {name: [system(name, seed)["metrics"] for seed in _seeds_of(name, sizes, seeds)]
                for name in sizes.systems}
    references = [p.references for p in data.test]
    significance: dict[str, list[float | None]] = {name: [] for name in sizes.systems}
    for seed in range(seeds):
        others = [n for n in sizes.systems if n != "NMT" and seed in _seeds_of(n, sizes, seeds)]
        sig = paired_bootstrap(system("NMT", seed)["outputs"], {n: system(n, seed)["outputs"] for n in others},
                               references, n_samples=1000)
        significance["NMT"].append(None)
        for name in others:
            significance[name].append(sig[name]["p_value"])
    sweep = range(min(seeds, sizes.sweep_seeds))
    table = {name: {"seeds": len(per_seed[name]),
                    **{key: mean_std([m[key] for m in per_seed[name]])
                       for key in ("bleu", "chrf", "entropy_per_token", "zero_share", "sink_share_first",
                                   "sink_share_last", "tokens_per_second")}}
             for name in sizes.systems}
    examples = [{"source": data.detokenize(pair.source), "reference": pair.references[0],
                 **{n: system(n, 0)["outputs"][k] for n in sizes.systems}}
                for k, pair in enumerate(data.test[:n_examples])]
    results: dict[str, Any] = {
        "protocol": "baseline trained per seed (early stopping on dev BLEU), every system then fine-tuned "
                    f"from it for {sizes.finetune_steps} steps (the NMT row too)",
        "corpus": data.corpus, "sizes": asdict(sizes), "systems": {n: asdict(SYSTEMS[n]) for n in sizes.systems},
        "vocab": {"source": len(data.src_vocab), "target": len(data.tgt_vocab)},
        "baselines": [of[Run.of("baseline", profile=profile, seed=seed)] for seed in range(seeds)],
        "table": table, "per_seed": per_seed, "p_values_vs_baseline": significance,
        "training_speed": of[Run.of("speed", profile=profile)],
        "greedy_vs_beam": {"greedy": mean_std([m["bleu_greedy"] for m in per_seed["NMT"]]),
                           "beam": table["NMT"]["bleu"], "beam_size": sizes.beam_size},
        "lambda_sweep": {str(lam): {key: mean_std([system(System(penalty="entropy", penalty_weight=lam), s)["metrics"][key]
                                                   for s in sweep])
                                    for key in ("bleu", "chrf", "entropy_per_token", "sink_share_first")}
                         for lam in sizes.penalty_weights},
        "lambda_sweep_seeds": len(sweep),
        "examples": examples,
        "heatmaps": {n: system(n, 0)["heatmap"] for n in ("NMT", "+Entropy", "+Sparsemax") if n in sizes.systems},
        "finetune_nll": {n: system(n, 0)["step_nll"] for n in sizes.systems},
    }
    if alignment is None:
        results["alignment"] = {"status": "pending: the data package has no aligned corpus yet"}
    else:
        train_pairs, test_pairs, align_corpus = alignment
        scores = {n: [of[Run.of("alignment", profile=profile, system=n, seed=s)] for s in _seeds_of(n, sizes, seeds)]
                  for n in sizes.alignment_systems}
        uniform = (sum(len(p.target) * math.log(len(p.source)) for p in test_pairs)
                   / sum(len(p.target) for p in test_pairs))  # entropy per target word of uniform attention
        results["alignment"] = {"corpus": {**align_corpus, "train_pairs": len(train_pairs),
                                           "test_pairs": len(test_pairs)},
                                "uniform_entropy_per_token": uniform,
                                "per_seed": scores,
                                "scores": {n: {k: mean_std([s[k] for s in v]) for k in v[0]}
                                           for n, v in scores.items()},
                                "baselines": of[Run.of("alignment-baselines", profile=profile)]}
    outputs = {n: [system(n, s)["outputs"] for s in _seeds_of(n, sizes, seeds)] for n in sizes.systems}
    results["pooled_vs_baseline"] = {n: dict(zip(("difference", "p"), bleu_test(outputs, references, n, "NMT")))
                                     for n in sizes.systems if n != "NMT"}
    sweep_outputs = {str(lam): system(System(penalty="entropy", penalty_weight=lam), 0)["outputs"]
                     for lam in sizes.penalty_weights}
    results["checks"] = {**checks(results, seeds),
                         "claims": judge(outputs, references, per_seed, sweep_outputs,
                                         results["alignment"].get("per_seed"))}
    return rounded(results)


def checks(results: dict[str, Any], seeds: int) -> dict[str, Any]:
    """The headline numbers of ``nmt.json`` that the chapters and outside checks read: the baseline's
    BLEU, chrF and source-shuffle BLEU, every system's sink share (first source token), and the AER of
    the attention of each alignment system next to the diagonal and IBM Model 1 (``None`` without the
    alignment corpus); means over seeds."""
    table, alignment = results["table"], results["alignment"]
    scored = "scores" in alignment
    return {"baseline_bleu_mean": table["NMT"]["bleu"]["mean"], "baseline_chrf_mean": table["NMT"]["chrf"]["mean"],
            "shuffled_source_bleu_mean": mean_std([m["bleu_shuffled_source"] for m in results["per_seed"]["NMT"]])["mean"],
            "seeds": seeds, "sink_share": {n: row["sink_share_first"]["mean"] for n, row in table.items()},
            "aer": {n: row["aer"]["mean"] for n, row in alignment["scores"].items()} if scored else None,
            "aer_seeds": min(len(v) for v in alignment["per_seed"].values()) if scored else 0,
            "aer_diagonal": alignment["baselines"]["diagonal"] if scored else None,
            "aer_ibm1": alignment["baselines"]["ibm1"] if scored else None}


def run(profile: str = "quick", seeds: int = 1, data: TranslationData | None = None,
        alignment: Alignment | None = None, n_examples: int = 8,
        device: torch.device | str | None = None) -> dict[str, Any]:
    """All of chapter 9's measurements at ``profile`` size, the runs one after another in this process;
    ``data`` and ``alignment`` override the corpora (tests); ``device`` defaults to
    :func:`~sparse_tutorial.profiles.default_device` (CUDA when present, else the CPU)."""
    data, alignment = _corpora(profile, data, alignment)
    runs = grid(profile, seeds)
    results = run_sweep(runs, functools.partial(execute, data=data, alignment=alignment, device=device),
                        threads_per_run=SIZES[profile].threads, progress=False)
    return assemble(profile, seeds, runs, results, data, alignment, n_examples)


def heatmap_index(pairs: Sequence[Pair]) -> int:
    """A test verse of middling length for the attention heatmaps (the first of 8-14 source tokens)."""
    for i, p in enumerate(pairs):
        if 8 <= len(p.source) <= 14:
            return i
    return 0
