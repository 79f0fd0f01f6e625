"""Experiment ``nmt``: Zhang et al. (2019) §VI-A / §VII-A, Tables I-IV and Fig. 5, explained in chapters 9-10.

Bible German→English translation (:mod:`~sparse_tutorial.experiments.nmt.data`: both German versions as
training sources, joint BPE pieces, three English references) with the attentional LSTM encoder-decoder of
:mod:`sparse_tutorial.models.seq2seq`, in the systems of Table I
(:mod:`~sparse_tutorial.experiments.nmt.training`), **each trained from scratch** with the same recipe,
data and budget, as in the paper:

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

plus our remedy (+Entropy switched on from epoch 3), the λ sweep of +Entropy (Table IV) and one timing
run. Word alignment (Table III) is experiment :mod:`~sparse_tutorial.experiments.alignment`. This module is
the experiment's grid of runs and what each run computes; :mod:`~sparse_tutorial.experiments.nmt.results`
assembles ``nmt.json`` from them and judges the claims.

``python -m sparse_tutorial.experiments nmt --profile medium --seeds 3 --workers 2`` writes
``book/results/nmt.json``; its run records (``book/results/runs/nmt-medium/``) are committed as they
finish, so the grid can be continued from any clone.
"""
from __future__ import annotations

import functools
from dataclasses import asdict, fields
from typing import Any

import numpy as np
import torch

from sparse_tutorial.experiments.nmt import design
from sparse_tutorial.experiments.nmt.data import TranslationData, middling_verses, translation_corpus
from sparse_tutorial.experiments.nmt.results import assemble
from sparse_tutorial.experiments.nmt.training import (
    HEADLINE, SIZES, SYSTEMS, Sizes, System, test_system, train_system, training_speed, verse_measures,
)
from sparse_tutorial.runs.sweep import Run, run_sweep
from sparse_tutorial.metrics import repeated_ngram_fraction
from sparse_tutorial.profiles import default_device

HEATMAPS = 3
"""Test verses whose attention every system run stores (Fig. 5)."""
PARTIAL_GRIDS = True
"""``nmt.json`` may be assembled from an unfinished grid (``--stored-only``): a claim whose arms lack runs
is "not tested", and the file names the missing runs (a grid of days is judged as it grows)."""


# ----------------------------------------------------------------------------------------- the experiment
def system_run(profile: str, system: System, seed: int) -> Run:
    """The run training ``system`` with ``seed`` (named by its fields, so the λ sweep's +Entropy at the
    paper's λ is the same run as Table I's)."""
    return Run.of("system", profile=profile, seed=seed, **asdict(system))


def runs_of(profile: str, seeds: int) -> list[Run]:
    """Every run of the experiment at ``profile`` with seeds ``0 … seeds − 1``, in the order a sweep trains
    them: the systems of the paper's main claims (:data:`HEADLINE`), the other systems (those of
    ``one_seed`` with seed 0 only), the λ sweep, and the timing run; then, when these are the pilot of the
    confirmatory design (its profile, its 3 seeds: :mod:`~sparse_tutorial.experiments.nmt.design`), the
    design's fresh seeds: every fresh seed of the primary family's arms, then of the arms only the secondary
    family needs, then of the fresh estimation arms."""
    sizes = SIZES[profile]
    headline = [n for n in HEADLINE if n in sizes.systems]
    others = [n for n in sizes.systems if n not in HEADLINE]
    sweep = [System(penalty="entropy", penalty_weight=lam) for lam in sizes.penalty_weights]
    runs = ([system_run(profile, SYSTEMS[n], seed) for seed in range(seeds) for n in headline]
            + [system_run(profile, SYSTEMS[n], seed) for seed in range(seeds) for n in others
               if seed == 0 or n not in sizes.one_seed]
            + [system_run(profile, system, seed) for seed in range(seeds) for system in sweep]
            + [Run.of("speed", profile=profile)])
    if profile == design.PROFILE and seeds == len(design.PILOT_SEEDS):
        runs += [system_run(profile, SYSTEMS[arm], seed) for group in design.training_groups()
                 for seed in design.FRESH_SEEDS for arm in group]
    return list(dict.fromkeys(runs))


def grid(profile: str, seeds: int) -> list[Run]:
    """:func:`runs_of`, after loading (and so checking) the corpus."""
    translation_corpus(SIZES[profile].corpus)
    return runs_of(profile, seeds)


def execute(run: Run, data: TranslationData | None = None, device: torch.device | str | None = None,
            sizes: Sizes | None = None) -> dict[str, Any]:
    """One run of :func:`grid`; ``data``, ``device`` and ``sizes`` override the corpus,
    :func:`~sparse_tutorial.profiles.default_device` and the profile's :data:`SIZES` (tests).

    Returns:
        ``system``: the test ``metrics`` (:func:`~sparse_tutorial.experiments.nmt.training.test_system`,
        with ``max_weight`` and ``repeated_bigrams``), the detokenized test ``outputs``, the per-verse sums of
        the attention measures (``verses``), per epoch the dev BLEU, training loss, NLL and attention
        entropy and the dev attention's entropy and first-token sink share (``epochs``), ``best_epoch`` and
        :data:`HEATMAPS` attention ``heatmaps``; ``speed``:
        :func:`~sparse_tutorial.experiments.nmt.training.training_speed` of every system of the profile.
    """
    profile = run["profile"]
    sizes = sizes or SIZES[profile]
    device = torch.device(device) if device is not None else default_device()
    data = data if data is not None else translation_corpus(sizes.corpus)
    if run.kind == "speed":
        return training_speed(data, sizes, sizes.systems, device)
    system = System(**{field.name: run[field.name] for field in fields(System)})
    model, history, dev_attention = train_system(system, data, sizes, run["seed"], device)
    outputs, attention, metrics = test_system(model, history, data, sizes, run["seed"],
                                              controls=system == SYSTEMS["NMT"])
    verses = verse_measures(attention, outputs)
    metrics.update(max_weight=sum(verses["max_weight"]) / sum(verses["tokens"]),
                   repeated_bigrams=repeated_ngram_fraction(outputs, 2))
    epochs = history.epochs
    return {"metrics": metrics, "outputs": [data.detokenize(o) for o in outputs], "verses": verses,
            "epochs": {"dev_bleu": [e["dev"] for e in epochs], "loss": [e["loss"] for e in epochs],
                       "nll": [e["nll"] for e in epochs], "entropy": [e["entropy"] for e in epochs],
                       "dev_entropy": [m["entropy_per_token"] for m in dev_attention],
                       "dev_sink_first": [m["sink_share_first"] for m in dev_attention],
                       "seconds": np.cumsum([e["seconds"] for e in epochs]).tolist()},
            "best_epoch": history.best_epoch,
            "heatmaps": [{"source": data.test[i].source, "output": outputs[i], "attention": attention[i].tolist()}
                         for i in middling_verses(data.test, HEATMAPS)]}


def run(profile: str = "quick", seeds: int = 1, data: TranslationData | None = None, n_examples: int = 8,
        device: torch.device | str | None = None) -> dict[str, Any]:
    """All of the experiment's measurements at ``profile`` size, the runs one after another in this process;
    ``data`` overrides the corpus (tests); ``device`` defaults to
    :func:`~sparse_tutorial.profiles.default_device` (CUDA when present, else the CPU)."""
    data = data if data is not None else translation_corpus(SIZES[profile].corpus)
    runs = runs_of(profile, seeds)
    results = run_sweep(runs, functools.partial(execute, data=data, device=device),
                        threads_per_run=SIZES[profile].threads, progress=False)
    return assemble(profile, seeds, runs, results, data, n_examples)

