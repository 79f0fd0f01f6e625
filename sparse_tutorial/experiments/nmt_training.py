"""The systems of Table I (Zhang et al. 2019) and how experiment ``nmt`` trains and evaluates each one.

**Protocol.** Zhang et al. train every system from scratch. On a CPU that does not fit, so each seed trains
the baseline once (:func:`pretrain`: the dev BLEU of every epoch recorded, the best epoch kept) and every
system -- the baseline included, as the control -- then continues from that checkpoint for the same number
of steps with its own attention and loss (:func:`finetune`). :func:`run_system` fine-tunes and scores one
system on the test set: BLEU and chrF of beam search, the attention entropy per target token, the share of
exact zeros and the sink shares; the baseline also with greedy search and the source-shuffle control (each
test source replaced by another verse's). The baselines are cached (:func:`baseline_weights`), so chapter 9
and every worker of a parallel sweep start from the same weights.
"""
from __future__ import annotations

import hashlib
import json
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np
import torch

from sparse_tutorial.data import shuffled_sources
from sparse_tutorial.data.cache import cache_dir
from sparse_tutorial.decoding import Decoded
from sparse_tutorial.experiments.nmt_data import BOS_ID, EOS_ID, CorpusSizes, Pair, TranslationData
from sparse_tutorial.metrics import attention_entropy_per_token, sink_share
from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig, TranslationBatch, make_batch, seq2seq_loss
from sparse_tutorial.profiles import seed_everything
from sparse_tutorial.training import (History, LossFn, TrainConfig, epoch_seed, load_checkpoint, save_checkpoint,
                                      train)


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
        embedding_dim, hidden_dim, layers, dropout: the model (``layers`` encoder and decoder layers).
        batch_tokens: target tokens per batch.
        epochs, learning_rate, patience: baseline training (:func:`pretrain`, early stopping on dev BLEU).
        finetune_steps, finetune_learning_rate: what every system does from the baseline (:func:`finetune`).
        beam_size: beam search on the test set.
        systems, penalty_weights: rows of :data:`SYSTEMS` and the λ sweep of +Entropy.
        sweep_seeds: seeds of the rows outside :data:`HEADLINE` and of the λ sweep (at most ``--seeds``).
        alignment_systems, align_epochs, align_batch_tokens: the Greek→English attention models of Table
            III (word-level, trained from scratch).
        threads: torch CPU threads per run.
    """

    corpus: CorpusSizes
    embedding_dim: int
    hidden_dim: int
    layers: int
    dropout: float
    batch_tokens: int
    epochs: int
    learning_rate: float
    patience: int | None
    finetune_steps: int
    finetune_learning_rate: float
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
                   embedding_dim=64, hidden_dim=64, layers=1, dropout=0.1, batch_tokens=800, epochs=14,
                   learning_rate=3e-3, patience=None, finetune_steps=30, finetune_learning_rate=1e-3, beam_size=4,
                   systems=("NMT", "+Temp 0.1", "+Sparsemax", "+Entropy"), penalty_weights=(), sweep_seeds=1,
                   alignment_systems=("NMT", "+Entropy"), align_epochs=4, align_batch_tokens=600),
    "medium": Sizes(CorpusSizes(n_train=40000, n_dev=400, n_test=600, max_len=32, vocab_size=2000,
                                german=("elberfelder", "schlachter"), n_align_train=3000, n_align_test=300,
                                max_align_len=24),
                    embedding_dim=128, hidden_dim=128, layers=1, dropout=0.2, batch_tokens=1500, epochs=12,
                    learning_rate=3e-3, patience=None, finetune_steps=150, finetune_learning_rate=1e-3, beam_size=4,
                    systems=tuple(SYSTEMS), penalty_weights=PENALTY_WEIGHTS, sweep_seeds=1,
                    alignment_systems=_ALIGNMENT, align_epochs=8, align_batch_tokens=800),
    "full": Sizes(CorpusSizes(n_train=60000, n_dev=1000, n_test=2000, max_len=64, vocab_size=8000,
                              german=("elberfelder", "schlachter"), n_align_train=7000, n_align_test=500,
                              max_align_len=80),
                  embedding_dim=256, hidden_dim=512, layers=2, dropout=0.2, batch_tokens=6000, epochs=15,
                  learning_rate=1e-3, patience=3, finetune_steps=1000, finetune_learning_rate=5e-4, beam_size=8,
                  systems=tuple(SYSTEMS), penalty_weights=PENALTY_WEIGHTS, sweep_seeds=3,
                  alignment_systems=_ALIGNMENT, align_epochs=12, align_batch_tokens=2000),
}
"""``quick``: chapters 8-9's own run, a few minutes on one CPU core: the verses of up to 24 pieces (about
4,200 pairs), 14 epochs. ``medium``: the stored run, on two CPU cores (``--workers 2``): the verses of up to
32 pieces from both German versions (about 18,000 pairs), a 128-dim one-layer model, 12 epochs. ``full``:
paper-like depth, for a GPU (the paper: 1000-dim states, 2+2 layers, 4.5 M WMT pairs)."""


# ------------------------------------------------------------------------------------- train, evaluate
def build_model(system: System, sizes: Sizes, src_vocab: int, tgt_vocab: int) -> Seq2Seq:
    """The seq2seq model of ``system`` at ``sizes``."""
    return Seq2Seq(Seq2SeqConfig(src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed_dim=sizes.embedding_dim,
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
    return lambda epoch: data.batches(data.train, sizes.batch_tokens, shuffle_seed=epoch_seed(seed, offset + epoch))


def pretrain(data: TranslationData, sizes: Sizes, seed: int, device: torch.device | str,
             progress: bool = False) -> tuple[Seq2Seq, History]:
    """Train the baseline (``NMT``) with ``seed``: up to ``sizes.epochs`` epochs, early stopping on dev BLEU
    (greedy), the best epoch's weights kept."""
    seed_everything(seed)
    model = build_model(SYSTEMS["NMT"], sizes, len(data.src_vocab), len(data.tgt_vocab))
    history = train(model, batches_for(data, sizes, seed), loss_for(SYSTEMS["NMT"]),
                    TrainConfig(epochs=sizes.epochs, lr=sizes.learning_rate, patience=sizes.patience, seed=seed,
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
                    TrainConfig(epochs=1, lr=sizes.finetune_learning_rate, seed=seed, device=device, grad_clip=5.0,
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
        optimizers[n] = torch.optim.Adam(models[n].parameters(), lr=sizes.learning_rate)
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


# ---------------------------------------------------------------------------------- the cached baselines
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
