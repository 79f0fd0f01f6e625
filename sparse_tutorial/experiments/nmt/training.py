"""The systems of Table I (Zhang et al. 2019) and how experiment ``nmt`` trains and evaluates each one.

**Protocol (the paper's, with one budget for all).** Every system trains from scratch with the same recipe,
data and budget (:func:`train_system`: ``epochs`` epochs, the best dev-BLEU epoch kept; the dev BLEU and the
dev attention's entropy and sink share recorded after every epoch), and :func:`test_system` scores it on the
test set: BLEU and chrF of beam search, the attention measures corpus-wide and per verse (so intervals can
resample verses), repetition, and for the baseline the greedy and source-shuffle controls. Chapters 9 and 10
train their quick systems the same way.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import torch

from sparse_tutorial.data import shuffled_sources
from sparse_tutorial.decoding import Decoded
from sparse_tutorial.experiments.nmt.data import BOS_ID, EOS_ID, CorpusSizes, Pair, TranslationData
from sparse_tutorial.metrics import attention_entropy_per_token, sink_share
from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig, TranslationBatch, make_batch, seq2seq_loss
from sparse_tutorial.profiles import seed_everything
from sparse_tutorial.training import (History, LossFn, TrainConfig, epoch_seed, train)


@dataclass(frozen=True)
class System:
    """One row of Table I: the attention projection (``temperature`` for ``"temperature"``/``"gumbel"``),
    the coverage model, and the attention regularizer ``penalty`` with its weight ``penalty_weight`` (λ of
    eq. 12), switched on at epoch ``penalty_start_epoch`` (0: from the first step, as in the paper)."""

    projection: str = "softmax"
    temperature: float | None = None
    coverage: str | None = None
    penalty: str | None = None
    penalty_weight: float = 0.0
    penalty_start_epoch: int = 0

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
    "+Entropy from epoch 3": System(penalty="entropy", penalty_weight=0.01, penalty_start_epoch=2),
    "+Entmax 1.5": System(projection="entmax15"),
}
"""Table I of Zhang et al. (2019), in its order (λ = 0.01 for both regularizers, as in the paper); our remedy
for an entropy penalty that makes attention one-hot before it has learned where to look: the same penalty
switched on after two epochs of plain training (not in the paper); and 1.5-entmax, the sparse projection
between softmax and sparsemax (chapter 7; not in the paper, trained by chapter 10's own run only)."""

STORED_SYSTEMS = tuple(name for name in SYSTEMS if name != "+Entmax 1.5")
"""The systems of the stored grids (``medium``, ``full``): every row of :data:`SYSTEMS` but 1.5-entmax."""

HEADLINE = ("NMT", "+Coverage", "+Sparsemax", "+L∞", "+Entropy", "+Cov+Ent")
"""The systems of the paper's main claims (§VII-A); a sweep trains them first."""

PENALTY_WEIGHTS = (0.005, 0.01, 0.02, 0.04, 0.08)
"""The λ sweep of +Entropy (Table IV)."""


@dataclass(frozen=True)
class Sizes:
    """Data, model and training sizes of one profile.

    Attributes:
        corpus: which verses (:class:`~sparse_tutorial.experiments.nmt.data.CorpusSizes`).
        embedding_dim, hidden_dim, layers, dropout: the model (``layers`` encoder and decoder layers).
        batch_tokens: target tokens per batch.
        epochs, learning_rate, lr_decay_start: training (:func:`train_system`: every epoch, the best dev-BLEU
            one kept; the learning rate halved each epoch from ``lr_decay_start`` on, ``None``: constant).
        beam_size: beam search on the test set.
        systems, penalty_weights: rows of :data:`SYSTEMS` and the λ sweep of +Entropy.
        one_seed: systems shown in Table I but named in no claim: trained with the first seed only.
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
    beam_size: int
    systems: tuple[str, ...]
    penalty_weights: tuple[float, ...]
    one_seed: tuple[str, ...] = ()
    threads: int = 1
    lr_decay_start: int | None = None


SIZES: dict[str, Sizes] = {
    "quick": Sizes(CorpusSizes(n_train=10000, n_dev=100, n_test=200, max_len=24, vocab_size=1000,
                               german=("elberfelder", "schlachter")),
                   embedding_dim=64, hidden_dim=64, layers=1, dropout=0.1, batch_tokens=800, epochs=14,
                   learning_rate=3e-3, beam_size=4,
                   systems=("NMT", "+Sparsemax", "+Entmax 1.5", "+Entropy"), penalty_weights=()),
    "medium": Sizes(CorpusSizes(n_train=40000, n_dev=400, n_test=1000, max_len=32, vocab_size=2000,
                                german=("elberfelder", "schlachter")),
                    embedding_dim=128, hidden_dim=128, layers=1, dropout=0.2, batch_tokens=750, epochs=17,
                    learning_rate=3e-3, lr_decay_start=12, beam_size=4,
                    systems=STORED_SYSTEMS, penalty_weights=PENALTY_WEIGHTS, one_seed=("+Temp 0.6", "+Temp 0.4")),
    "full": Sizes(CorpusSizes(n_train=60000, n_dev=1000, n_test=2000, max_len=64, vocab_size=8000,
                              german=("elberfelder", "schlachter")),
                  embedding_dim=256, hidden_dim=512, layers=2, dropout=0.2, batch_tokens=6000, epochs=15,
                  learning_rate=1e-3, beam_size=8,
                  systems=STORED_SYSTEMS, penalty_weights=PENALTY_WEIGHTS, one_seed=("+Temp 0.6", "+Temp 0.4")),
}
"""``quick``: chapters 8-9's own runs, about two minutes per system on one CPU core: the verses of up to 24
pieces (about 4,200 pairs), 14 epochs. ``medium``: the stored run, on two CPU cores (``--workers 2``): the
verses of up to 32 pieces from both German versions (about 18,000 pairs), a 128-dim one-layer model,
batches of 750 target pieces (twice the updates per epoch of 1,500 and more dev BLEU per epoch, 24.2 after
8 epochs against 19.2, though not per CPU second: 473 s against 510 s of one thread to dev BLEU 19.2,
``benchmarks/bench_nmt_training.py`` at commit e0864af), 17 epochs for every system, the learning rate
halved each epoch from the 13th, the best dev epoch kept. With a constant learning rate the baseline was
still gaining after 30 epochs (dev BLEU 31.4, +0.15 per epoch over the last ten); halved from the 13th
epoch it reaches 30.6 at the 15th and stays within 0.6 of it (halved from the 9th it stops at 27.6):
``nmt_training_speed.json``. 1,000 test verses drawn from the whole Bible.
``full``: paper-like depth, for a GPU (the paper: 1000-dim states, 2+2 layers, 4.5 M WMT pairs)."""


class ModelSizes(Protocol):
    """The sizes :func:`build_model` reads (:class:`Sizes` and the alignment experiment's sizes have them)."""

    embedding_dim: int
    hidden_dim: int
    layers: int
    dropout: float


# ------------------------------------------------------------------------------------- train, evaluate
def build_model(system: System, sizes: ModelSizes, src_vocab: int, tgt_vocab: int) -> Seq2Seq:
    """The seq2seq model of ``system`` at ``sizes``."""
    return Seq2Seq(Seq2SeqConfig(src_vocab=src_vocab, tgt_vocab=tgt_vocab, embed_dim=sizes.embedding_dim,
                                 hidden_dim=sizes.hidden_dim, attention_dim=sizes.hidden_dim,
                                 encoder_layers=sizes.layers, decoder_layers=sizes.layers,
                                 dropout=sizes.dropout, **system.model_kwargs()))


def loss_for(system: System, steps_per_epoch: int | None = None) -> LossFn:
    """The :data:`~sparse_tutorial.training.LossFn` of ``system``: eq. 12, NLL + λ R(α); with a
    ``penalty_start_epoch``, λ = 0 for the first ``penalty_start_epoch · steps_per_epoch`` training steps."""
    if not system.penalty_start_epoch:
        return lambda model, batch: seq2seq_loss(model, batch, penalty=system.penalty, lam=system.penalty_weight)
    if not steps_per_epoch:
        raise ValueError(f"{system} switches its penalty on after some epochs: give steps_per_epoch")
    steps = itertools.count()

    def loss(model: Seq2Seq, batch: TranslationBatch) -> tuple[torch.Tensor, dict[str, float]]:
        on = model.training and next(steps) >= system.penalty_start_epoch * steps_per_epoch
        return seq2seq_loss(model, batch, penalty=system.penalty, lam=system.penalty_weight if on else 0.0)
    return loss


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


def train_system(system: System, data: TranslationData, sizes: Sizes, seed: int, device: torch.device | str,
                 progress: bool = False) -> tuple[Seq2Seq, History, list[dict[str, float]]]:
    """Train ``system`` from scratch with ``seed`` for ``sizes.epochs`` epochs, the weights of the epoch with
    the best dev BLEU (greedy) kept.

    Returns:
        The model, its :class:`History` (``epochs[e]["dev"]`` is the dev BLEU after epoch ``e``) and, per
        epoch, the :func:`attention_measures` of the dev translations.
    """
    seed_everything(seed)
    model = build_model(system, sizes, len(data.src_vocab), len(data.tgt_vocab))
    batches = batches_for(data, sizes, seed)

    def dev_bleu(m: Seq2Seq) -> tuple[float, dict[str, float]]:
        outputs, attention = translate(m, data, data.dev, beam_size=1)
        return data.bleu(outputs, data.dev), attention_measures(attention)

    history = train(model, batches, loss_for(system, len(batches(0))),
                    TrainConfig(epochs=sizes.epochs, lr=sizes.learning_rate, lr_decay_start=sizes.lr_decay_start,
                                seed=seed, device=device, grad_clip=5.0, progress=progress), dev_fn=dev_bleu)
    return model, history, [epoch["dev_stats"] for epoch in history.epochs]


def test_system(model: Seq2Seq, history: History, data: TranslationData, sizes: Sizes, seed: int,
                controls: bool = False) -> tuple[list[list[str]], list[torch.Tensor], dict[str, float]]:
    """Translate the test set with beam search: (outputs, attention, metrics), the metrics BLEU, chrF, the
    :func:`attention_measures` and the training speed; with ``controls`` also greedy BLEU and the
    :func:`shuffled_source_bleu` control."""
    outputs, attention = translate(model, data, data.test, beam_size=sizes.beam_size)
    metrics = {"bleu": data.bleu(outputs, data.test), "chrf": data.chrf(outputs, data.test),
               **attention_measures(attention), "tokens_per_second": history.throughput("tokens")}
    if controls:
        metrics["bleu_greedy"] = data.bleu(translate(model, data, data.test, beam_size=1)[0], data.test)
        metrics["bleu_shuffled_source"] = shuffled_source_bleu(model, data, data.test, sizes.beam_size, seed)
    return outputs, attention, metrics


def verse_measures(attention: Sequence[torch.Tensor], outputs: Sequence[Sequence[str]]) -> dict[str, list[float]]:
    """Per test verse, the sums that the mechanism measures divide (so an interval can resample verses):
    ``tokens`` (target rows), ``entropy`` (summed over rows), ``max_weight`` (summed), ``zeros`` and
    ``cells`` (exact zeros and all weights), ``first`` (rows whose argmax is the first source token),
    ``repeated_bigrams`` and ``bigrams`` of the output."""
    out: dict[str, list[float]] = {k: [] for k in ("tokens", "entropy", "max_weight", "zeros", "cells", "first",
                                                     "repeated_bigrams", "bigrams")}
    for matrix, tokens in zip(attention, outputs):
        logs = torch.where(matrix > 0, matrix.clamp_min(1e-30).log(), torch.zeros_like(matrix))
        bigrams = [tuple(tokens[i:i + 2]) for i in range(len(tokens) - 1)]
        for key, value in (("tokens", matrix.shape[0]), ("entropy", float(-(matrix * logs).sum())),
                           ("max_weight", float(matrix.max(dim=-1).values.sum())), ("zeros", int((matrix == 0).sum())),
                           ("cells", matrix.numel()), ("first", int((matrix.argmax(dim=-1) == 0).sum())),
                           ("repeated_bigrams", len(bigrams) - len(set(bigrams))), ("bigrams", len(bigrams))):
            out[key].append(round(float(value), 5))
    return out


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
            loss_fn = loss_for(SYSTEMS[n], steps_per_epoch=len(batches))
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
