"""Experiment ``nmt``: Zhang et al. (2019) §VI-A / §VII-A, Tables I-IV and Fig. 5, explained in chapters 8-9.

Bible German→English translation (:mod:`~sparse_tutorial.experiments.nmt_data`: both German versions as
training sources, joint BPE pieces, three English references) with the attentional LSTM encoder-decoder of
:mod:`sparse_tutorial.models.seq2seq`, in the systems of Table I:

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

plus the λ sweep of +Entropy (Table IV) and word alignment (Table III, :mod:`~sparse_tutorial.experiments.nmt_alignment`).

**Protocol.** Zhang et al. train every system from scratch. On a CPU that does not fit, so each seed trains
the baseline once (:func:`pretrain`: early stopping on dev BLEU) and every system -- the baseline included,
as the control -- then continues from that checkpoint for the same number of steps with its own attention
and loss (:func:`finetune`). Differences between systems are therefore differences in what the same
number of steps with each regularizer did to the same model. Every system is scored with case-insensitive
BLEU and chrF (beam search), paired bootstrap resampling against the baseline of the same seed, attention
entropy per target token and the sink shares; the baseline also with greedy search and the source-shuffle
control (each test source replaced by another verse's).

``python -m sparse_tutorial.experiments nmt --profile medium --seeds 3 --workers 2`` writes
``book/results/nmt.json``.
"""
from __future__ import annotations

import functools
import hashlib
import json
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np
import torch

from sparse_tutorial.data import shuffled_sources
from sparse_tutorial.data.cache import cache_dir
from sparse_tutorial.decoding import Decoded
from sparse_tutorial.experiments.nmt_alignment import Alignment, baseline_alignment_scores, run_alignment
from sparse_tutorial.experiments.nmt_claims import bleu_test, judge
from sparse_tutorial.experiments.nmt_data import (
    BOS_ID, EOS_ID, CorpusSizes, Pair, TranslationData, load_alignment_data, load_translation_data,
)
from sparse_tutorial.experiments.runner import mean_std, rounded
from sparse_tutorial.experiments.sweep import Run, run_sweep
from sparse_tutorial.metrics import attention_entropy_per_token, paired_bootstrap, sink_share
from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig, TranslationBatch, make_batch, seq2seq_loss
from sparse_tutorial.profiles import default_device, seed_everything
from sparse_tutorial.training import History, LossFn, TrainConfig, load_checkpoint, save_checkpoint, train

PROFILES = ("quick", "medium", "full")
"""``quick``: the chapters' own run; ``medium``: the stored run, sized for two CPU cores; ``full``: a GPU."""


@dataclass(frozen=True)
class System:
    """One row of Table I: the attention projection (``temperature`` for ``"temperature"``/``"gumbel"``),
    the coverage model, and the attention regularizer ``penalty`` with its weight ``penalty_weight`` (λ of
    eq. 12)."""

    projection: str = "softmax"
    temperature: float | None = None
    coverage: str | None = None
    penalty: str | None = None
    penalty_weight: float = 0.0

    def model_kwargs(self) -> dict[str, Any]:
        kwargs = {} if self.temperature is None else {"temperature": self.temperature}
        return {"projection": self.projection, "projection_kwargs": kwargs, "coverage": self.coverage}


SYSTEMS: dict[str, System] = {
    "NMT": System(),
    "+Coverage": System(coverage="neural"),
    **{f"+Temp {t}": System(projection="temperature", temperature=t) for t in (0.8, 0.6, 0.4, 0.2, 0.1)},
    "+Gumbel": System(projection="gumbel", temperature=1.0),
    "+Sparsemax": System(projection="sparsemax"),
    "+L∞": System(penalty="linf", penalty_weight=0.01),
    "+Entropy": System(penalty="entropy", penalty_weight=0.01),
    "+Cov+Ent": System(coverage="neural", penalty="entropy", penalty_weight=0.01),
}
"""Table I of Zhang et al. (2019), in its order (λ = 0.01 for both regularizers, as in the paper)."""

HEADLINE = ("NMT", "+Coverage", "+Sparsemax", "+L∞", "+Entropy", "+Cov+Ent")
"""The systems whose claims the chapter judges; they run with every seed, the others with ``sweep_seeds``."""

PENALTY_WEIGHTS = (0.005, 0.01, 0.02, 0.04, 0.08)
"""The λ sweep of +Entropy (Table IV)."""


@dataclass(frozen=True)
class Sizes:
    """Data, model and training sizes of one profile.

    Attributes:
        corpus: which verses (:class:`~sparse_tutorial.experiments.nmt_data.CorpusSizes`).
        embed_dim, hidden_dim, layers, dropout: the model (``layers`` encoder and decoder layers).
        batch_tokens: target tokens per batch.
        epochs, lr, patience: baseline training (:func:`pretrain`, early stopping on dev BLEU).
        finetune_steps, finetune_lr: what every system does from the baseline (:func:`finetune`).
        beam_size: beam search on the test set.
        systems, penalty_weights: rows of :data:`SYSTEMS` and the λ sweep of +Entropy.
        sweep_seeds: seeds of the rows outside :data:`HEADLINE` and of the λ sweep (at most ``--seeds``).
        alignment_systems, align_epochs, align_batch_tokens: the Greek→English attention models of Table
            III (word-level, trained from scratch).
        threads: torch CPU threads per run.
    """

    corpus: CorpusSizes
    embed_dim: int
    hidden_dim: int
    layers: int
    dropout: float
    batch_tokens: int
    epochs: int
    lr: float
    patience: int | None
    finetune_steps: int
    finetune_lr: float
    beam_size: int
    systems: tuple[str, ...]
    penalty_weights: tuple[float, ...]
    sweep_seeds: int
    alignment_systems: tuple[str, ...]
    align_epochs: int
    align_batch_tokens: int
    threads: int = 1


_ALIGNMENT = ("NMT", "+Coverage", "+Entropy", "+Cov+Ent")
SIZES: dict[str, Sizes] = {
    "quick": Sizes(CorpusSizes(n_train=10000, n_dev=100, n_test=200, max_len=24, vocab_size=1000,
                               german=("elberfelder", "schlachter"), n_align_train=1200, n_align_test=100,
                               max_align_len=16),
                   embed_dim=64, hidden_dim=64, layers=1, dropout=0.1, batch_tokens=800, epochs=14, lr=3e-3,
                   patience=None, finetune_steps=30, finetune_lr=1e-3, beam_size=4,
                   systems=("NMT", "+Temp 0.1", "+Sparsemax", "+Entropy"), penalty_weights=(), sweep_seeds=1,
                   alignment_systems=("NMT", "+Entropy"), align_epochs=4, align_batch_tokens=600),
    "medium": Sizes(CorpusSizes(n_train=40000, n_dev=400, n_test=600, max_len=32, vocab_size=2000,
                                german=("elberfelder", "schlachter"), n_align_train=3000, n_align_test=300,
                                max_align_len=24),
                    embed_dim=128, hidden_dim=128, layers=1, dropout=0.2, batch_tokens=1500, epochs=12, lr=3e-3,
                    patience=None, finetune_steps=150, finetune_lr=1e-3, beam_size=4, systems=tuple(SYSTEMS),
                    penalty_weights=PENALTY_WEIGHTS, sweep_seeds=1, alignment_systems=_ALIGNMENT,
                    align_epochs=8, align_batch_tokens=800),
    "full": Sizes(CorpusSizes(n_train=60000, n_dev=1000, n_test=2000, max_len=64, vocab_size=8000,
                              german=("elberfelder", "schlachter"), n_align_train=7000, n_align_test=500,
                              max_align_len=80),
                  embed_dim=256, hidden_dim=512, layers=2, dropout=0.2, batch_tokens=6000, epochs=15, lr=1e-3,
                  patience=3, finetune_steps=1000, finetune_lr=5e-4, beam_size=8, systems=tuple(SYSTEMS),
                  penalty_weights=PENALTY_WEIGHTS, sweep_seeds=3, alignment_systems=_ALIGNMENT, align_epochs=12,
                  align_batch_tokens=2000),
}
"""``quick``: chapters 8-9's own run, a few minutes on one CPU core: the verses of up to 24 pieces (about
4,200 pairs), 14 epochs. ``medium``: the stored run, on two CPU cores (``--workers 2``): the verses of up to
32 pieces from both German versions (about 18,000 pairs), a 128-dim one-layer model, 12 epochs. ``full``:
paper-like depth, for a GPU (the paper: 1000-dim states, 2+2 layers, 4.5 M WMT pairs)."""


# ------------------------------------------------------------------------------------- train, evaluate
def build_model(system: System, sizes: Sizes, src_vocab: int, tgt_vocab: int) -> Seq2Seq:
    """The seq2seq model of ``system`` at ``sizes``."""
    return Seq2Seq(Seq2SeqConfig(src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed_dim=sizes.embed_dim,
                                 hidden_dim=sizes.hidden_dim, attention_dim=sizes.hidden_dim,
                                 encoder_layers=sizes.layers, decoder_layers=sizes.layers,
                                 dropout=sizes.dropout, **system.model_kwargs()))


def loss_for(system: System) -> LossFn:
    """The :data:`~sparse_tutorial.training.LossFn` of ``system``: eq. 12, NLL + λ R(α)."""
    return lambda model, batch: seq2seq_loss(model, batch, penalty=system.penalty, lam=system.penalty_weight)


def translate(model: Seq2Seq, data: TranslationData, pairs: Sequence[Pair], beam_size: int,
              batch_size: int = 64) -> tuple[list[list[str]], list[torch.Tensor]]:
    """Translate ``pairs`` (in order) → output tokens and attention ``(out_len + 1, src_len)`` per pair."""
    device = next(model.parameters()).device
    outputs: list[list[str]] = []
    attention: list[torch.Tensor] = []
    for k in range(0, len(pairs), batch_size):
        chunk = pairs[k:k + batch_size]
        batch = make_batch([(data.src_vocab.encode(p.source), []) for p in chunk], bos=BOS_ID, eos=EOS_ID)
        out: Decoded = model.translate(batch.src.to(device), batch.src_mask.to(device), bos=BOS_ID, eos=EOS_ID,
                                       max_len=2 * max(len(p.source) for p in chunk) + 5, beam_size=beam_size)
        for row, (ids, attn) in enumerate(zip(out.tokens, out.attention)):
            outputs.append(data.tgt_vocab.decode(ids))
            attention.append(attn[:, :len(chunk[row].source)].cpu())
    return outputs, attention


def shuffled_source_bleu(model: Seq2Seq, data: TranslationData, pairs: Sequence[Pair], beam_size: int,
                         seed: int = 0) -> float:
    """The source-shuffle control: BLEU against the references of ``pairs`` of the translations of *other*
    verses' sources (:func:`~sparse_tutorial.data.shuffled_sources`). A model that uses its source scores
    far less here than on the real sources; a language model of the target side scores about the same."""
    sources = shuffled_sources([p.source for p in pairs], seed)
    outputs, _ = translate(model, data, [p._replace(source=s) for s, p in zip(sources, pairs)], beam_size)
    return data.bleu(outputs, pairs)


def attention_measures(attention: Sequence[torch.Tensor]) -> dict[str, float]:
    """Entropy per target token, share of exact zeros, and the sink shares: the share of target tokens whose
    attention argmax is the first or the last source token."""
    return {"entropy_per_token": attention_entropy_per_token(attention),
            "zero_share": float(np.mean([(a == 0).float().mean().item() for a in attention])),
            "sink_share_first": sink_share(attention, 0), "sink_share_last": sink_share(attention, -1)}


def batches_for(data: TranslationData, sizes: Sizes, seed: int, offset: int = 0
                ) -> Callable[[int], list[TranslationBatch]]:
    """``epoch -> batches`` of the training split, shuffled by ``seed``, the epoch and ``offset`` (fine-tuning
    continues with batch orders the baseline has not seen)."""
    return lambda epoch: data.batches(data.train, sizes.batch_tokens, shuffle_seed=seed * 1000 + offset + epoch)


def pretrain(data: TranslationData, sizes: Sizes, seed: int, device: torch.device | str,
             progress: bool = False) -> tuple[Seq2Seq, History]:
    """Train the baseline (``NMT``) with ``seed``: up to ``sizes.epochs`` epochs, early stopping on dev BLEU
    (greedy), the best epoch's weights kept."""
    seed_everything(seed)
    model = build_model(SYSTEMS["NMT"], sizes, len(data.src_vocab), len(data.tgt_vocab))
    history = train(model, batches_for(data, sizes, seed), loss_for(SYSTEMS["NMT"]),
                    TrainConfig(epochs=sizes.epochs, lr=sizes.lr, patience=sizes.patience, seed=seed,
                                device=device, grad_clip=5.0, progress=progress),
                    dev_fn=lambda m: data.bleu(translate(m, data, data.dev, beam_size=1)[0], data.dev))
    return model, history


def finetune(system: System, baseline: dict[str, torch.Tensor], data: TranslationData, sizes: Sizes, seed: int,
             device: torch.device | str, loss_fn: LossFn | None = None) -> tuple[Seq2Seq, History]:
    """Continue the ``baseline`` weights for ``sizes.finetune_steps`` steps as ``system`` (its projection,
    coverage and loss; ``loss_fn`` replaces :func:`loss_for` -- plug in your own regularizer). Parameters
    the baseline lacks (the coverage model) start from their initialisation."""
    seed_everything(seed)
    model = build_model(system, sizes, len(data.src_vocab), len(data.tgt_vocab))
    missing, unexpected = model.load_state_dict(baseline, strict=False)
    new = [k for k in missing if "coverage" not in k and not k.startswith("eval_attention.")]
    if unexpected or new:
        raise ValueError(f"the baseline weights do not fit {system}: unexpected {unexpected}, missing {new}")
    history = train(model, batches_for(data, sizes, seed, offset=500), loss_fn or loss_for(system),
                    TrainConfig(epochs=1, lr=sizes.finetune_lr, seed=seed, device=device, grad_clip=5.0,
                                max_steps_per_epoch=sizes.finetune_steps))
    return model, history


class SystemRun(NamedTuple):
    """A fine-tuned system and what it produced on the test set."""

    model: Seq2Seq
    history: History
    outputs: list[list[str]]
    attention: list[torch.Tensor]
    metrics: dict[str, float]


def run_system(system: System, baseline: dict[str, torch.Tensor], data: TranslationData, sizes: Sizes, seed: int,
               device: torch.device | str, controls: bool = False, loss_fn: LossFn | None = None) -> SystemRun:
    """:func:`finetune` ``system`` from ``baseline`` and evaluate it on the test set: BLEU and chrF of beam
    search and the :func:`attention_measures`; with ``controls`` also greedy BLEU and the
    :func:`shuffled_source_bleu` control."""
    model, history = finetune(system, baseline, data, sizes, seed, device, loss_fn)
    outputs, attention = translate(model, data, data.test, beam_size=sizes.beam_size)
    metrics = {"bleu": data.bleu(outputs, data.test), "chrf": data.chrf(outputs, data.test),
               **attention_measures(attention), "tokens_per_second": history.throughput("tokens")}
    if controls:
        metrics["bleu_greedy"] = data.bleu(translate(model, data, data.test, beam_size=1)[0], data.test)
        metrics["bleu_shuffled_source"] = shuffled_source_bleu(model, data, data.test, sizes.beam_size, seed)
    return SystemRun(model, history, outputs, attention, metrics)


def training_speed(data: TranslationData, sizes: Sizes, names: Sequence[str], device: torch.device,
                   steps: int = 20, repeats: int = 3) -> dict[str, dict[str, float]]:
    """Training target tokens/s of each system on the same ``steps`` batches, the systems measured in turn
    ``repeats`` times (so a busy machine slows all alike), median kept; ``overhead`` = slowdown vs ``NMT``."""
    batches = [TranslationBatch(*(t.to(device) for t in b)) for b in batches_for(data, sizes, 0)(0)[:steps]]
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


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (POSIX ``flock``; no lock where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:  # Windows: concurrent sweeps may train a baseline twice, which is only slower
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def baseline_path(profile: str, seed: int, data: TranslationData, sizes: Sizes | None = None) -> Path:
    """Where the baseline of ``seed`` at ``profile`` is cached: ``<data cache>/checkpoints``, the file name
    hashing the sizes, the parameter shapes, the data and the seed."""
    sizes = sizes or SIZES[profile]
    shapes = {k: list(v.shape) for k, v in
              build_model(SYSTEMS["NMT"], sizes, len(data.src_vocab), len(data.tgt_vocab)).state_dict().items()}
    key = hashlib.sha256(json.dumps([asdict(sizes), shapes, len(data.train), data.train[:3], data.dev[:3], seed],
                                    sort_keys=True, default=str).encode()).hexdigest()[:16]
    return cache_dir() / "checkpoints" / f"nmt-{profile}-seed{seed}-{key}.pt"


def save_baseline(path: Path, model: Seq2Seq, history: History) -> None:
    """Store a trained baseline (weights on the CPU, and its history) where :func:`baseline_weights` finds it."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    save_checkpoint(path, {"model": state, "history": history.to_dict()})


def baseline_weights(profile: str, seed: int, data: TranslationData, device: torch.device | str,
                     sizes: Sizes | None = None) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The baseline of ``seed`` at ``profile`` (weights, and the :class:`History` as a dict): loaded from
    :func:`baseline_path`, or trained by :func:`pretrain` and stored there. A lock lets parallel runs of a
    sweep wait for one training instead of repeating it."""
    path = baseline_path(profile, seed, data, sizes)
    with _locked(path.with_suffix(".lock")):
        if not path.exists():
            save_baseline(path, *pretrain(data, sizes or SIZES[profile], seed, device))
        stored = load_checkpoint(path)
    return stored["model"], stored["history"]


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
            loss_for(SYSTEMS[name]), train_pairs, test_pairs, sizes.align_epochs, sizes.align_batch_tokens, sizes.lr,
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
        results["alignment"] = {"corpus": {**align_corpus, "train_pairs": len(train_pairs),
                                           "test_pairs": len(test_pairs)},
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
