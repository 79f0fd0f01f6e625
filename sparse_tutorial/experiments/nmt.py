"""Experiment ``nmt``: Zhang et al. (2019) §VI-A / §VII-A, Tables I-IV and Fig. 5, explained in chapters 8-9.

German→English translation with the attentional encoder-decoder of :mod:`sparse_tutorial.models.seq2seq`,
in the systems of Table I:

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

plus the λ sweep of +Entropy (Table IV) and word alignment: Greek→English models trained on the verses of
a manually aligned corpus, whose teacher-forced attention is scored with AER and SAER (Table III) against
the gold sure/possible links (hard links: argmax of each target token's attention,
:func:`sparse_tutorial.metrics.hard_alignment`).

Every system is scored with case-insensitive BLEU (beam search), paired bootstrap resampling against the
baseline of the same seed, and the attention entropy per target token on the test set; training speed
(target tokens/s) measures each regularizer's overhead per step.

``python -m sparse_tutorial.experiments nmt --profile full --seeds 3`` writes ``book/results/nmt.json``.
"""
from __future__ import annotations

import functools
import random
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import torch

from sparse_tutorial.alignment_baselines import IBMModel1, diagonal_alignment
from sparse_tutorial.data import CORPORA, TranslationPair, Vocabulary, load, shuffled_sources, tokenize
from sparse_tutorial.data.cache import cache_dir
from sparse_tutorial.decoding import Decoded
from sparse_tutorial.metrics import (
    aer,
    argmax_agreement,
    attention_entropy_per_token,
    corpus_bleu,
    corpus_chrf,
    hard_alignment,
    paired_bootstrap,
    saer,
    sink_share,
)
from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig, TranslationBatch, make_batch, seq2seq_loss
from sparse_tutorial.experiments.runner import mean_std, rounded
from sparse_tutorial.experiments.sweep import Run, run_sweep
from sparse_tutorial.profiles import default_device, seed_everything
from sparse_tutorial.training import History, TrainConfig, train

BOS_ID, EOS_ID = Vocabulary.bos_id, Vocabulary.eos_id
ALIGNMENT_CORPUS = "bible_alignments"
"""The data package's name of the manually word-aligned Greek-English corpus (Table III)."""

PROFILES = ("quick", "medium-cpu", "full")
"""``medium-cpu`` stands in for ``full`` (GPU-sized) when only a CPU is at hand; the JSON says which ran."""


@dataclass(frozen=True)
class System:
    """One row of Table I."""

    projection: str = "softmax"
    temperature: float | None = None
    coverage: str | None = None
    penalty: str | None = None
    lam: float = 0.0

    def model_kwargs(self) -> dict[str, Any]:
        kwargs = {} if self.temperature is None else {"temperature": self.temperature}
        return {"projection": self.projection, "projection_kwargs": kwargs, "coverage": self.coverage}


SYSTEMS: dict[str, System] = {
    "NMT": System(),
    "+Coverage": System(coverage="neural"),
    **{f"+Temp {t}": System(projection="temperature", temperature=t) for t in (0.8, 0.6, 0.4, 0.2, 0.1)},
    "+Gumbel": System(projection="gumbel", temperature=1.0),
    "+Sparsemax": System(projection="sparsemax"),
    "+L∞": System(penalty="linf", lam=0.01),
    "+Entropy": System(penalty="entropy", lam=0.01),
    "+Cov+Ent": System(coverage="neural", penalty="entropy", lam=0.01),
}
"""Table I of Zhang et al. (2019), in its order (λ = 0.01 for both regularizers, as in the paper)."""

LAMBDAS = (0.005, 0.01, 0.02, 0.04, 0.08)
"""The λ sweep of +Entropy (Table IV)."""


@dataclass(frozen=True)
class Sizes:
    """Corpus slice, model and training sizes of one profile."""

    n_train: int
    n_dev: int
    n_test: int
    max_len: int             # sentence pairs longer than this (either side, in tokens) are left out
    min_freq: int            # rarer training words become <unk>
    embed_dim: int
    hidden_dim: int
    layers: int              # encoder and decoder layers (the paper: 2 and 2)
    dropout: float
    epochs: int
    batch_size: int
    lr: float
    beam_size: int
    patience: int | None
    systems: tuple[str, ...]      # rows of SYSTEMS trained
    lambdas: tuple[float, ...]    # λ sweep of +Entropy
    alignment_systems: tuple[str, ...]
    n_align_train: int
    n_align_test: int
    max_align_len: int            # aligned verses longer than this (either side) are left out
    headline_seeds: bool = True   # all systems run with every seed (else the sweeps use the first only)
    threads: int = 1              # torch CPU threads (small models are fastest on one)
    corpus: str = "bible"         # translation corpus: "bible" (3 English references) or "ding"


SIZES: dict[str, Sizes] = {
    "quick": Sizes(n_train=2500, n_dev=150, n_test=200, max_len=16, min_freq=2, embed_dim=48, hidden_dim=64,
                   layers=1, dropout=0.1, epochs=4, batch_size=32, lr=3e-3, beam_size=5, patience=None,
                   systems=("NMT", "+Temp 0.8", "+Temp 0.1", "+Sparsemax", "+Entropy"), lambdas=(),
                   alignment_systems=("NMT", "+Entropy"), n_align_train=1200, n_align_test=100,
                   max_align_len=16),
    "medium-cpu": Sizes(n_train=3046, n_dev=300, n_test=369, max_len=16, min_freq=2, embed_dim=64,
                        hidden_dim=96, layers=1, dropout=0.2, epochs=8, batch_size=32, lr=3e-3, beam_size=12,
                        patience=3, systems=tuple(SYSTEMS), lambdas=LAMBDAS,
                        alignment_systems=("NMT", "+Coverage", "+Entropy", "+Cov+Ent"), n_align_train=3000,
                        n_align_test=300, max_align_len=24, headline_seeds=False),
    "full": Sizes(n_train=15000, n_dev=1761, n_test=1761, max_len=30, min_freq=2, embed_dim=256,
                  hidden_dim=512, layers=2, dropout=0.2, epochs=12, batch_size=128, lr=1e-3, beam_size=12,
                  patience=3, systems=tuple(SYSTEMS), lambdas=LAMBDAS,
                  alignment_systems=("NMT", "+Coverage", "+Entropy", "+Cov+Ent"), n_align_train=7000,
                  n_align_test=500, max_align_len=80),
}
"""``quick``: chapter 9's own run, a couple of minutes on two CPU cores. ``medium-cpu``: every training
verse of up to 16 tokens, the quick model with 96-dim states, every system with every seed (the sweeps with
the first): 40 minutes with ``--seeds 3`` on one core of a shared 2-core machine. ``full``: verses of up to
30 tokens and paper-like depth, for a GPU (the paper: 1000-dim states, 2+2 layers, 4.5 M WMT pairs -- 180
times more sentences than the Bible's 25 k training verses). All three translate the German Elberfelder
Bible into English and score BLEU against three English versions; ``corpus="ding"`` swaps in the Ding
dictionary's example sentences, which are idioms more often than not and much harder to learn from a few
thousand pairs."""


# ------------------------------------------------------------------------------------------------ data
class Pair(NamedTuple):
    """A sentence pair: tokenized source, tokenized target and every reference (tokenized) for BLEU."""

    source: list[str]
    target: list[str]
    references: list[list[str]]


class AlignedPair(NamedTuple):
    """A pair with gold word alignment: ``(source_index, target_index)`` sure and possible links."""

    source: list[str]
    target: list[str]
    sure: set[tuple[int, int]]
    possible: set[tuple[int, int]]


@dataclass
class TranslationData:
    """Splits, vocabularies and provenance of one translation corpus."""

    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    corpus: dict[str, Any]

    def batches(self, pairs: Sequence[Pair], batch_size: int, shuffle_seed: int | None = None
                ) -> list[TranslationBatch]:
        """Length-bucketed batches of ``pairs`` (sorted by source length, then shuffled batch order)."""
        order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i].source), len(pairs[i].target)))
        chunks = [order[k:k + batch_size] for k in range(0, len(order), batch_size)]
        if shuffle_seed is not None:
            random.Random(shuffle_seed).shuffle(chunks)
        return [make_batch([(self.src_vocab.encode(pairs[i].source), self.tgt_vocab.encode(pairs[i].target))
                            for i in chunk], bos=BOS_ID, eos=EOS_ID) for chunk in chunks]


def build_data(train: list[Pair], dev: list[Pair], test: list[Pair], min_freq: int,
               corpus: dict[str, Any]) -> TranslationData:
    """Vocabularies from the training split only."""
    return TranslationData(train, dev, test, Vocabulary.build([p.source for p in train], min_freq),
                           Vocabulary.build([p.target for p in train], min_freq), corpus)


def load_translation_data(sizes: Sizes) -> TranslationData:
    """The German→English pairs of ``sizes.corpus`` (:mod:`sparse_tutorial.data.bible`: verses with three
    English references; or :mod:`sparse_tutorial.data.ding`), in the corpus's own hash split, tokenized,
    pairs longer than ``sizes.max_len`` tokens on either side (first reference) left out, then sliced to
    ``sizes``. Dev and test leave out sources that also occur in the training split (the Bible repeats
    some verses word for word). The model trains on the first reference; BLEU scores against all of them."""
    corpus = load(sizes.corpus, verbose=False)

    def pairs(split: Sequence[TranslationPair]) -> list[Pair]:
        out = []
        for p in split:
            source, targets = tokenize(p.source), [tokenize(t) for t in p.targets]
            if len(source) <= sizes.max_len and len(targets[0]) <= sizes.max_len:
                out.append(Pair(source, targets[0], targets))
        return out

    train = pairs(corpus.train)
    seen = {tuple(p.source) for p in train}
    dev, test = ([p for p in pairs(split) if tuple(p.source) not in seen] for split in (corpus.dev, corpus.test))
    train, dev, test = train[:sizes.n_train], dev[:sizes.n_dev], test[:sizes.n_test]
    provenance = asdict(corpus.provenance) if corpus.provenance is not None else {"name": corpus.name}
    info = {**provenance, "parse_report": corpus.report.line(), "splits_in_corpus": corpus.sizes(),
            "max_len": sizes.max_len, "pairs_used": {"train": len(train), "dev": len(dev), "test": len(test)},
            "tokenizer": "sparse_tutorial.data.tokenize (lower-cased words and punctuation)"}
    return build_data(train, dev, test, sizes.min_freq, info)


def load_alignment_data(sizes: Sizes) -> tuple[list[AlignedPair], list[AlignedPair], dict[str, Any]] | None:
    """Greek→English verses with manual alignments (:mod:`sparse_tutorial.data.bible_alignments`), words
    lower-cased, verses longer than ``sizes.max_align_len`` left out: (train, test, provenance); test comes
    from the corpus's test split. ``None`` while the data package has no such corpus."""
    if ALIGNMENT_CORPUS not in CORPORA:
        return None
    corpus = load(ALIGNMENT_CORPUS, verbose=False)

    def convert(verses: Sequence[Any], n: int) -> list[AlignedPair]:
        out = [AlignedPair([w.lower() for w in v.source_tokens], [w.lower() for w in v.target_tokens],
                           set(map(tuple, v.sure)), set(map(tuple, v.possible)))
               for v in verses if max(len(v.source_tokens), len(v.target_tokens)) <= sizes.max_align_len]
        return out[:n]

    train = convert(corpus.train + corpus.dev, sizes.n_align_train)
    test = convert(corpus.test, sizes.n_align_test)
    provenance = asdict(corpus.provenance) if corpus.provenance is not None else {"name": corpus.name}
    return train, test, {**provenance, "parse_report": corpus.report.line(), "max_len": sizes.max_align_len}


# ------------------------------------------------------------------------------------- train, evaluate
def build_model(system: System, sizes: Sizes, src_vocab: int, tgt_vocab: int) -> Seq2Seq:
    """The seq2seq model of ``system`` at ``sizes``."""
    return Seq2Seq(Seq2SeqConfig(src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed_dim=sizes.embed_dim,
                                 hidden_dim=sizes.hidden_dim, attention_dim=sizes.hidden_dim,
                                 encoder_layers=sizes.layers, decoder_layers=sizes.layers,
                                 dropout=sizes.dropout, **system.model_kwargs()))


def loss_for(system: System) -> Callable[[Seq2Seq, TranslationBatch], tuple[torch.Tensor, dict[str, float]]]:
    """The :data:`~sparse_tutorial.training.LossFn` of ``system`` (eq. 12)."""
    return lambda model, batch: seq2seq_loss(model, batch, penalty=system.penalty, lam=system.lam)


def translate(model: Seq2Seq, data: TranslationData, pairs: Sequence[Pair], beam_size: int,
              batch_size: int = 64) -> tuple[list[list[str]], list[torch.Tensor]]:
    """Translate ``pairs`` (in order) → output tokens and attention ``(out_len + 1, src_len)`` per pair."""
    device = next(model.parameters()).device
    outputs: list[list[str]] = []
    attention: list[torch.Tensor] = []
    for k in range(0, len(pairs), batch_size):
        chunk = pairs[k:k + batch_size]
        batch = make_batch([(data.src_vocab.encode(p.source), []) for p in chunk], bos=BOS_ID, eos=EOS_ID)
        src, mask = batch.src.to(device), batch.src_mask.to(device)
        out: Decoded = model.translate(src, mask, bos=BOS_ID, eos=EOS_ID, max_len=2 * max(len(p.source) for p in chunk) + 5,
                                       beam_size=beam_size)
        for row, (ids, attn) in enumerate(zip(out.tokens, out.attention)):
            outputs.append(data.tgt_vocab.decode(ids))
            attention.append(attn[:, :len(chunk[row].source)].cpu())
    return outputs, attention


def bleu_of(outputs: Sequence[Sequence[str]], pairs: Sequence[Pair]) -> float:
    """Case-insensitive corpus BLEU of token lists against every reference of each pair (already tokenized
    by :func:`sparse_tutorial.data.tokenize`, so sacrebleu's own tokenizer is off)."""
    return corpus_bleu([" ".join(o) for o in outputs], [[" ".join(r) for r in p.references] for p in pairs],
                       tokenize="none")


def chrf_of(outputs: Sequence[Sequence[str]], pairs: Sequence[Pair]) -> float:
    """Case-insensitive corpus chrF of token lists against every reference of each pair."""
    return corpus_chrf([" ".join(o) for o in outputs], [[" ".join(r) for r in p.references] for p in pairs])


def shuffled_source_bleu(model: Seq2Seq, data: TranslationData, pairs: Sequence[Pair], beam_size: int,
                         seed: int = 0) -> float:
    """The source-shuffle control: BLEU against the references of ``pairs`` of the translations of *other*
    verses' sources (each pair's source replaced by another's, :func:`~sparse_tutorial.data.shuffled_sources`).
    A model that uses its source scores far less here than on the real sources; a language model of the
    target side scores about the same."""
    sources = shuffled_sources([p.source for p in pairs], seed)
    outputs, _ = translate(model, data, [Pair(source, p.target, p.references) for source, p in zip(sources, pairs)],
                           beam_size)
    return bleu_of(outputs, pairs)


def attention_measures(attention: Sequence[torch.Tensor]) -> dict[str, float]:
    """Entropy per target token, share of exact zeros, and the sink shares: the share of target tokens whose
    attention argmax is the first or the last source token."""
    return {"entropy_per_token": attention_entropy_per_token(attention),
            "zero_share": float(np.mean([(a == 0).float().mean().item() for a in attention])),
            "sink_share_first": sink_share(attention, 0), "sink_share_last": sink_share(attention, -1)}


class SystemRun(NamedTuple):
    """A trained system and what it produced on the test set."""

    model: Seq2Seq
    history: History
    outputs: list[list[str]]
    attention: list[torch.Tensor]
    metrics: dict[str, float]


def run_system(system: System, data: TranslationData, sizes: Sizes, seed: int, device: torch.device,
               controls: bool = False) -> SystemRun:
    """Train ``system`` with ``seed`` (early stopping on dev BLEU, greedy) and evaluate it on the test set:
    BLEU and chrF of beam search, and the :func:`attention_measures`; with ``controls`` (the baseline) also
    greedy BLEU and the :func:`shuffled_source_bleu` control."""
    seed_everything(seed)
    model = build_model(system, sizes, len(data.src_vocab), len(data.tgt_vocab))
    dev = data.dev

    def dev_bleu(m: Seq2Seq) -> float:
        return bleu_of(translate(m, data, dev, beam_size=1)[0], dev)

    history = train(model, lambda epoch: data.batches(data.train, sizes.batch_size, shuffle_seed=seed * 1000 + epoch),
                    loss_for(system), TrainConfig(epochs=sizes.epochs, lr=sizes.lr, patience=sizes.patience,
                                                  seed=seed, device=device, grad_clip=5.0),
                    dev_fn=dev_bleu)
    outputs, attention = translate(model, data, data.test, beam_size=sizes.beam_size)
    metrics = {"bleu": bleu_of(outputs, data.test), "chrf": chrf_of(outputs, data.test),
               **attention_measures(attention),
               "dev_bleu": history.best_dev, "best_epoch": history.best_epoch,
               "tokens_per_second": history.throughput("tokens"),
               "train_seconds": sum(e["seconds"] for e in history.epochs)}
    if controls:
        greedy, _ = translate(model, data, data.test, beam_size=1)
        metrics["bleu_greedy"] = bleu_of(greedy, data.test)
        metrics["bleu_shuffled_source"] = shuffled_source_bleu(model, data, data.test, sizes.beam_size, seed)
    return SystemRun(model, history, outputs, attention, metrics)


def training_speed(data: TranslationData, sizes: Sizes, names: Sequence[str], device: torch.device,
                   steps: int = 20, repeats: int = 3) -> dict[str, dict[str, float]]:
    """Training target tokens/s of each system on the same ``steps`` batches, the systems measured in turn
    ``repeats`` times (so a busy machine slows all alike), median kept; ``overhead`` = slowdown vs ``NMT``."""
    batches = [b for b in data.batches(data.train, sizes.batch_size, shuffle_seed=0)[:steps]]
    batches = [TranslationBatch(*(t.to(device) for t in b)) for b in batches]
    tokens = sum(int(b.tgt_mask.sum()) for b in batches)
    models, optimizers, speeds = {}, {}, {n: [] for n in names}
    for n in names:
        seed_everything(0)
        models[n] = build_model(SYSTEMS[n], sizes, len(data.src_vocab), len(data.tgt_vocab)).to(device).train()
        optimizers[n] = torch.optim.Adam(models[n].parameters(), lr=sizes.lr)
    for _ in range(repeats):
        for n in names:
            loss_fn = loss_for(SYSTEMS[n])
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            tic = time.perf_counter()
            for b in batches:
                optimizers[n].zero_grad(set_to_none=True)
                loss_fn(models[n], b)[0].backward()
                optimizers[n].step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            speeds[n].append(tokens / (time.perf_counter() - tic))
    median = {n: float(np.median(v)) for n, v in speeds.items()}
    base = median.get("NMT", next(iter(median.values())))
    return {n: {"tokens_per_second": v, "overhead": base / v - 1.0} for n, v in median.items()}


def forced_attention(model: Seq2Seq, src_vocab: Vocabulary, tgt_vocab: Vocabulary, pairs: Sequence[AlignedPair]
                     ) -> list[torch.Tensor]:
    """Teacher-forced attention on the reference translation: ``(len(target), len(source))`` per pair (the
    row of ``</s>`` dropped), the matrices AER/SAER score."""
    device = next(model.parameters()).device
    model.eval()
    out = []
    with torch.no_grad():
        for k in range(0, len(pairs), 64):
            chunk = pairs[k:k + 64]
            b = make_batch([(src_vocab.encode(p.source), tgt_vocab.encode(p.target)) for p in chunk], BOS_ID, EOS_ID)
            _, attn = model(b.src.to(device), b.src_mask.to(device), b.tgt_in.to(device))
            out += [attn[r, :len(p.target), :len(p.source)].cpu() for r, p in enumerate(chunk)]
    return out


def alignment_scores(attention: Sequence[torch.Tensor], pairs: Sequence[AlignedPair]) -> dict[str, float]:
    """AER (argmax hard links), SAER (eq. 23) and argmax agreement of attention with the gold links of
    ``pairs``."""
    sure, possible = [p.sure for p in pairs], [p.possible for p in pairs]
    return {"aer": aer([hard_alignment(a) for a in attention], sure, possible),
            "saer": saer(attention, sure, possible), "argmax_agreement": argmax_agreement(attention, sure)}


def baseline_alignment_scores(train_pairs: Sequence[AlignedPair], test_pairs: Sequence[AlignedPair],
                              iterations: int = 5) -> dict[str, float]:
    """AER on ``test_pairs`` of the two alignments without attention: the diagonal, and IBM Model 1 trained
    by EM on the sentences of ``train_pairs`` (no gold link used), the verses the attention models train on."""
    sure, possible = [p.sure for p in test_pairs], [p.possible for p in test_pairs]
    ibm1 = IBMModel1.train([(p.source, p.target) for p in train_pairs], iterations)
    return {"diagonal": aer([diagonal_alignment(len(p.source), len(p.target)) for p in test_pairs], sure, possible),
            "ibm1": aer([ibm1.align(p.source, p.target) for p in test_pairs], sure, possible)}


def run_alignment(system: System, train_pairs: list[AlignedPair], test_pairs: list[AlignedPair], sizes: Sizes,
                  seed: int, device: torch.device) -> dict[str, float]:
    """Train Greek→English on ``train_pairs`` (no dev set: fixed epochs) and score alignments on ``test_pairs``."""
    as_pairs = [Pair(p.source, p.target, [p.target]) for p in train_pairs]
    data = build_data(as_pairs, [], [], sizes.min_freq, {})
    seed_everything(seed)
    model = build_model(system, sizes, len(data.src_vocab), len(data.tgt_vocab))
    train(model, lambda epoch: data.batches(data.train, sizes.batch_size, shuffle_seed=seed * 1000 + epoch),
          loss_for(system), TrainConfig(epochs=sizes.epochs, lr=sizes.lr, seed=seed, device=device))
    attention = forced_attention(model, data.src_vocab, data.tgt_vocab, test_pairs)
    return {**alignment_scores(attention, test_pairs), **attention_measures(attention)}


# ----------------------------------------------------------------------------------------- the experiment
# The experiment is a grid of independent runs (sparse_tutorial.experiments.sweep): every system × seed,
# the λ sweep, the alignment models, and one timing run; `assemble` builds nmt.json from their results.
def _system_run(profile: str, system: System, seed: int) -> Run:
    """The run training ``system`` with ``seed`` (named by its fields, so the λ sweep's +Entropy at the
    paper's λ is the same run as Table I's)."""
    return Run.of("system", profile=profile, seed=seed, **asdict(system))


def grid(profile: str, seeds: int) -> list[Run]:
    """Every training of the experiment at ``profile`` with seeds ``0 … seeds − 1``: the systems (every
    seed), the λ sweep and the alignment models (every seed, or the first only when
    ``Sizes.headline_seeds`` is false), the alignments without attention, and the timing run. Loads (and
    so checks) both corpora first."""
    _corpora(profile)
    sizes = SIZES[profile]
    sweep_seeds = range(seeds if sizes.headline_seeds else 1)
    return ([_system_run(profile, SYSTEMS[name], seed) for seed in range(seeds) for name in sizes.systems]
            + [_system_run(profile, System(penalty="entropy", lam=lam), seed)
               for lam in sizes.lambdas for seed in sweep_seeds]
            + [Run.of("alignment", profile=profile, system=name, seed=seed)
               for name in sizes.alignment_systems for seed in sweep_seeds]
            + ([Run.of("alignment-baselines", profile=profile)] if sizes.alignment_systems else [])
            + [Run.of("speed", profile=profile)])


Alignment = tuple[list[AlignedPair], list[AlignedPair], dict[str, Any]]
"""Greek→English training and test verses with gold links, and their provenance."""


def _corpora(profile: str, data: TranslationData | None = None, alignment: Alignment | None = None
             ) -> tuple[TranslationData, Alignment | None]:
    """The corpora of ``profile``, ``data`` and ``alignment`` where given; the others are loaded (once per
    process), so that a corpus that is not fetched fails before any training."""
    data = data if data is not None else _translation_data(profile)
    if alignment is None and SIZES[profile].alignment_systems:
        alignment = _alignment_data(profile)
    return data, alignment


def _translation_data(profile: str) -> TranslationData:
    return _loaded(load_translation_data, SIZES[profile], cache_dir())


def _alignment_data(profile: str) -> Alignment | None:
    return _loaded(load_alignment_data, SIZES[profile], cache_dir())


@functools.lru_cache(maxsize=None)
def _loaded(load: Callable[[Sizes], Any], sizes: Sizes, cache: Path) -> Any:
    """``load(sizes)``, once per process for each ``sizes`` and data cache folder."""
    return load(sizes)


def execute(run: Run, data: TranslationData | None = None, alignment: Alignment | None = None,
            device: torch.device | str | None = None) -> dict[str, Any]:
    """One run of :func:`grid`; ``data``, ``alignment`` and ``device`` override the corpora and
    :func:`~sparse_tutorial.profiles.default_device` (tests, the chapter).

    Returns:
        ``system``: ``metrics``, the test ``outputs`` (detokenized), the epoch losses ``curve``, the per-step
        ``step_nll`` and the attention ``heatmap`` of one test sentence; ``alignment``: AER, SAER, argmax
        agreement and :func:`attention_measures`; ``alignment-baselines``: :func:`baseline_alignment_scores`;
        ``speed``: :func:`training_speed` of every system of the profile.
    """
    sizes = SIZES[run["profile"]]
    device = torch.device(device) if device is not None else default_device()
    if run.kind in ("alignment", "alignment-baselines"):
        train_pairs, test_pairs, _ = _corpora(run["profile"], data, alignment)[1]
        if run.kind == "alignment-baselines":
            return baseline_alignment_scores(train_pairs, test_pairs)
        return run_alignment(SYSTEMS[run["system"]], train_pairs, test_pairs, sizes, run["seed"], device)
    data = data if data is not None else _translation_data(run["profile"])
    if run.kind == "speed":
        return training_speed(data, sizes, sizes.systems, device)
    system = System(**{field.name: run[field.name] for field in fields(System)})
    result = run_system(system, data, sizes, run["seed"], device, controls=system == SYSTEMS["NMT"])
    index = _heatmap_index(data.test)
    return {"metrics": result.metrics, "outputs": [" ".join(o) for o in result.outputs],
            "curve": [e["loss"] for e in result.history.epochs],
            "step_nll": [s["nll"] for s in result.history.steps],
            "heatmap": {"source": data.test[index].source, "output": result.outputs[index],
                        "attention": result.attention[index].tolist()}}


def assemble(profile: str, seeds: int, runs: Sequence[Run], results: Sequence[dict[str, Any]],
             data: TranslationData | None = None, alignment: Alignment | None = None,
             n_examples: int = 8) -> dict[str, Any]:
    """``nmt.json`` from the results of :func:`grid`'s runs: Table I per seed and averaged, paired bootstrap
    p-values against the baseline of the same seed, the λ sweep, alignment scores, training speed, and the
    seed-0 examples, heatmaps and loss curves."""
    sizes = SIZES[profile]
    data, alignment = _corpora(profile, data, alignment)
    of = dict(zip(runs, results))

    def system(name_or_system: str | System, seed: int) -> dict[str, Any]:
        chosen = SYSTEMS[name_or_system] if isinstance(name_or_system, str) else name_or_system
        return of[_system_run(profile, chosen, seed)]

    seed_list = list(range(seeds))
    per_seed = {name: [system(name, seed)["metrics"] for seed in seed_list] for name in sizes.systems}
    references = [[" ".join(r) for r in p.references] for p in data.test]
    significance: dict[str, list[float | None]] = {name: [] for name in sizes.systems}
    for seed in seed_list:
        sig = paired_bootstrap(system("NMT", seed)["outputs"],
                               {n: system(n, seed)["outputs"] for n in sizes.systems if n != "NMT"},
                               references, n_samples=1000, tokenize="none")
        for name in sizes.systems:
            significance[name].append(sig[name if name != "NMT" else "baseline"]["p_value"])
    sweep_seeds = seed_list if sizes.headline_seeds else seed_list[:1]
    table = {name: {key: mean_std([m[key] for m in per_seed[name]])
                    for key in ("bleu", "chrf", "entropy_per_token", "zero_share", "sink_share_first",
                                "sink_share_last", "tokens_per_second")}
             for name in sizes.systems}
    examples = [{"source": " ".join(pair.source), "reference": " ".join(pair.references[0]),
                 **{n: system(n, 0)["outputs"][k] for n in sizes.systems}}
                for k, pair in enumerate(data.test[:n_examples])]
    results: dict[str, Any] = {
        "corpus": data.corpus, "sizes": asdict(sizes), "systems": {n: asdict(SYSTEMS[n]) for n in sizes.systems},
        "vocab": {"source": len(data.src_vocab), "target": len(data.tgt_vocab)},
        "table": table, "per_seed": per_seed, "p_values_vs_baseline": significance,
        "training_speed": of[Run.of("speed", profile=profile)],
        "greedy_vs_beam": {"greedy": mean_std([m["bleu_greedy"] for m in per_seed["NMT"]]),
                           "beam": table["NMT"]["bleu"], "beam_size": sizes.beam_size},
        "lambda_sweep": {str(lam): {key: mean_std([system(System(penalty="entropy", lam=lam), s)["metrics"][key]
                                                   for s in sweep_seeds])
                                    for key in ("bleu", "entropy_per_token")} for lam in sizes.lambdas},
        "examples": examples,
        "heatmaps": {n: system(n, 0)["heatmap"] for n in ("NMT", "+Entropy") if n in sizes.systems},
        "loss_curves": {n: system(n, 0)["curve"] for n in sizes.systems},
        "baseline_step_nll": system("NMT", 0)["step_nll"],
    }
    if alignment is None:
        results["alignment"] = {"status": f"pending: the data package has no {ALIGNMENT_CORPUS!r} corpus yet"}
    else:
        train_pairs, test_pairs, align_corpus = alignment
        scores = {n: [of[Run.of("alignment", profile=profile, system=n, seed=s)] for s in sweep_seeds]
                  for n in sizes.alignment_systems}
        results["alignment"] = {"corpus": {**align_corpus, "train_pairs": len(train_pairs),
                                           "test_pairs": len(test_pairs)},
                                "scores": {n: {k: mean_std([s[k] for s in v]) for k in v[0]}
                                           for n, v in scores.items()},
                                "baselines": of[Run.of("alignment-baselines", profile=profile)]}
    results["checks"] = checks(results, seeds, len(sweep_seeds))
    return rounded(results)


def checks(results: dict[str, Any], seeds: int, alignment_seeds: int) -> dict[str, Any]:
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
            "aer_seeds": alignment_seeds if scored else 0,
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


def _heatmap_index(pairs: Sequence[Pair]) -> int:
    """A test sentence of middling length for the attention heatmaps (the first of 6-9 source tokens)."""
    for i, p in enumerate(pairs):
        if 6 <= len(p.source) <= 9:
            return i
    return 0
