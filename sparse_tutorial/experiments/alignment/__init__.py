"""Experiment ``alignment``: Zhang et al. (2019) Table III, explained in chapter 10.

Attention as a word aligner. Greek→English attention models (:mod:`sparse_tutorial.models.seq2seq`, the
NMT, +Coverage, +Entropy and +Cov+Ent systems of Table I, :mod:`~sparse_tutorial.experiments.nmt.training`)
are trained from scratch on the manually word-aligned New Testament verses
(:mod:`~sparse_tutorial.experiments.alignment.data`). Their teacher-forced attention on the test verses is
scored with AER and SAER against the gold links, next to two aligners without attention: the diagonal and
IBM Model 1 (:mod:`~sparse_tutorial.experiments.alignment.training`).

Table III is its own experiment, not part of ``nmt``: the aligners train on another corpus, in minutes, and
their recipe can change without making the translation grid's stored runs (days of CPU) stale.

``python -m sparse_tutorial.experiments alignment --profile medium --seeds 3 --workers 2`` writes
``book/results/alignment.json``; :mod:`~sparse_tutorial.experiments.alignment.results` assembles it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch

from sparse_tutorial.experiments.alignment.data import Alignment, AlignmentCorpusSizes, alignment_corpus
from sparse_tutorial.experiments.alignment import results as alignment_results
from sparse_tutorial.experiments.alignment.training import baseline_alignment_scores, run_alignment
from sparse_tutorial.experiments.nmt.training import SYSTEMS, attention_measures, build_model, loss_for
from sparse_tutorial.runs.sweep import Run, run_sweep
from sparse_tutorial.profiles import default_device

PARTIAL_GRIDS = True
"""``alignment.json`` may be assembled from an unfinished grid (``--stored-only``)."""


@dataclass(frozen=True)
class Sizes:
    """Data, model and training sizes of one profile.

    Attributes:
        corpus: which aligned verses (:class:`~sparse_tutorial.experiments.alignment.data.AlignmentCorpusSizes`).
        embedding_dim, hidden_dim, layers, dropout: the model (word-level, ``layers`` encoder and decoder layers).
        batch_tokens, epochs, learning_rate, patience: training (early stopping on the teacher-forced NLL of
            the dev verses, the best epoch kept; ``patience=None``: every epoch).
        systems: rows of :data:`~sparse_tutorial.experiments.nmt.training.SYSTEMS` to train.
        ibm1_iterations: EM iterations of IBM Model 1.
        threads: torch CPU threads per run.
    """

    corpus: AlignmentCorpusSizes
    embedding_dim: int
    hidden_dim: int
    layers: int
    dropout: float
    batch_tokens: int
    epochs: int
    learning_rate: float
    patience: int | None
    systems: tuple[str, ...]
    ibm1_iterations: int = 5
    threads: int = 1


TABLE_III = ("NMT", "+Coverage", "+Entropy", "+Cov+Ent")
"""The systems of Table III."""

SIZES: dict[str, Sizes] = {
    "quick": Sizes(AlignmentCorpusSizes(n_train=1200, n_test=100, max_len=16, n_dev=100, greek_stem=6),
                   embedding_dim=64, hidden_dim=64, layers=1, dropout=0.1, batch_tokens=600, epochs=4,
                   learning_rate=3e-3, patience=None, systems=("NMT", "+Entropy")),
    "medium": Sizes(AlignmentCorpusSizes(n_train=10000, n_test=1000, max_len=80, n_dev=300, greek_stem=6,
                                         extra_targets=True),
                    embedding_dim=128, hidden_dim=128, layers=1, dropout=0.2, batch_tokens=800, epochs=20,
                    learning_rate=3e-3, patience=3, systems=TABLE_III),
    "full": Sizes(AlignmentCorpusSizes(n_train=10000, n_test=1000, max_len=80, n_dev=300, greek_stem=6,
                                       extra_targets=True),
                  embedding_dim=256, hidden_dim=512, layers=2, dropout=0.2, batch_tokens=2000, epochs=20,
                  learning_rate=1e-3, patience=3, systems=TABLE_III),
}
"""``quick``: a few minutes on one CPU core, short verses, one translation each (tests). ``medium``: the
stored run, every aligned verse of up to 80 words (about 6,800 for training, each with its three other
English translations, 300 held out to stop training, 800 for the test), Greek cut to 6-letter stems, a
128-dim one-layer model trained until the dev NLL has not improved for 3 epochs. With the one linked
translation per verse, a calibration of this model (dev AER each epoch) was still at 0.74 after 23 epochs,
the diagonal's level, with an attention entropy only 0.44 nats per word below uniform's (the control asks
for 0.5); with the four translations it reached 0.75 after 4 epochs and was still falling. ``full``: a deeper model,
for a GPU."""


def runs_of(profile: str, seeds: int) -> list[Run]:
    """Every run at ``profile`` with seeds ``0 … seeds − 1``: the aligners without attention first (no seed:
    the diagonal is fixed and EM is deterministic; they set the scale), then each system's aligner per seed."""
    return ([Run.of("baselines", profile=profile)]
            + [Run.of("aligner", profile=profile, system=name, seed=seed)
               for seed in range(seeds) for name in SIZES[profile].systems])


def grid(profile: str, seeds: int) -> list[Run]:
    """:func:`runs_of`, after loading (and so checking) the corpus."""
    alignment_corpus(SIZES[profile].corpus)
    return runs_of(profile, seeds)


def execute(run: Run, alignment: Alignment | None = None, device: torch.device | str | None = None,
            sizes: Sizes | None = None) -> dict[str, Any]:
    """One run of :func:`grid`; ``alignment``, ``device`` and ``sizes`` override the corpus,
    :func:`~sparse_tutorial.profiles.default_device` and the profile's :data:`SIZES` (tests).

    Returns:
        ``aligner``: :func:`~sparse_tutorial.experiments.alignment.training.run_alignment`'s scores (AER,
        SAER, argmax agreement, the per-verse AER counts, the dev NLL per epoch, the test NLL with real and
        shuffled sources) and the attention measures; ``baselines``: the diagonal's and IBM Model 1's AER.
    """
    sizes = sizes or SIZES[run["profile"]]
    alignment = alignment if alignment is not None else alignment_corpus(sizes.corpus)
    if run.kind == "baselines":
        return baseline_alignment_scores(alignment.train, alignment.test, sizes.ibm1_iterations)
    system = SYSTEMS[run["system"]]
    scores, attention = run_alignment(
        lambda src_vocab, tgt_vocab: build_model(system, sizes, src_vocab, tgt_vocab), loss_for(system),
        alignment, sizes.epochs, sizes.batch_tokens, sizes.learning_rate, run["seed"],
        torch.device(device) if device is not None else default_device(), patience=sizes.patience)
    return {**scores, **attention_measures(attention)}


def run(profile: str = "quick", seeds: int = 1, alignment: Alignment | None = None,
        device: torch.device | str | None = None) -> dict[str, Any]:
    """The experiment at ``profile`` size, the runs one after another in this process; ``alignment``
    overrides the corpus (tests)."""
    alignment = alignment if alignment is not None else alignment_corpus(SIZES[profile].corpus)
    runs = runs_of(profile, seeds)
    results = run_sweep(runs, functools.partial(execute, alignment=alignment, device=device),
                        threads_per_run=SIZES[profile].threads, progress=False)
    return assemble(profile, seeds, runs, results, alignment)


def assemble(profile: str, seeds: int, runs: list[Run], results: list[dict[str, Any]],
             alignment: Alignment | None = None) -> dict[str, Any]:
    """``alignment.json`` (:func:`~sparse_tutorial.experiments.alignment.results.assemble` at ``profile``)."""
    return alignment_results.assemble(SIZES[profile], seeds, runs, results, alignment)
