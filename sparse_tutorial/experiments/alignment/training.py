"""Word alignment from attention (Zhang et al. 2019, Table III): training and scoring for experiment ``alignment``.

Greek→English models are trained on the verses of a manually word-aligned corpus; their teacher-forced
attention on the test verses is scored with AER and SAER against the gold sure/possible links (hard links:
the argmax of each target word's attention, :func:`sparse_tutorial.metrics.hard_alignment`), next to two
alignments without attention: the diagonal, and IBM Model 1 trained by EM on the same verses.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from sparse_tutorial.alignment_baselines import IBMModel1, diagonal_alignment
from sparse_tutorial.data import shuffled_sources
from sparse_tutorial.experiments.alignment.data import AlignedPair, Alignment, word_data
from sparse_tutorial.experiments.nmt.data import BOS_ID, EOS_ID, TokenVocabulary, middling_verses
from sparse_tutorial.metrics import aer, argmax_agreement, hard_alignment, saer
from sparse_tutorial.models.seq2seq import Seq2Seq, make_batch
from sparse_tutorial.profiles import seed_everything
from sparse_tutorial.training import LossFn, TrainConfig, epoch_seed, train

EXAMPLES = 2
"""Test verses whose attention every aligner run stores (for the chapter's heatmaps)."""


def forced_attention(model: Seq2Seq, src_vocab: TokenVocabulary, tgt_vocab: TokenVocabulary,
                     pairs: Sequence[AlignedPair]) -> list[torch.Tensor]:
    """Teacher-forced attention on the reference translation: ``(len(target), len(source))`` per pair (the
    row of ``</s>`` dropped), the matrices AER/SAER score."""
    return _forced(model, src_vocab, tgt_vocab, pairs)[1]


def forced_nll(model: Seq2Seq, src_vocab: TokenVocabulary, tgt_vocab: TokenVocabulary,
               pairs: Sequence[AlignedPair]) -> float:
    """Teacher-forced negative log-likelihood per target word (``</s>`` included) of ``pairs``."""
    total, words = _forced(model, src_vocab, tgt_vocab, pairs)[0]
    return total / words


def _forced(model: Seq2Seq, src_vocab: TokenVocabulary, tgt_vocab: TokenVocabulary, pairs: Sequence[AlignedPair]
            ) -> tuple[tuple[float, int], list[torch.Tensor]]:
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    attention, total, words = [], 0.0, 0
    with torch.no_grad():
        for k in range(0, len(pairs), 64):
            chunk = pairs[k:k + 64]
            b = make_batch([(src_vocab.encode(p.source), tgt_vocab.encode(p.target)) for p in chunk], BOS_ID, EOS_ID)
            log_probs, attn = model(b.src.to(device), b.src_mask.to(device), b.tgt_in.to(device))
            nll = -log_probs.gather(-1, b.tgt_out.to(device).unsqueeze(-1)).squeeze(-1)
            total += float((nll * b.tgt_mask.to(device)).sum())
            words += int(b.tgt_mask.sum())
            attention += [attn[r, :len(p.target), :len(p.source)].cpu() for r, p in enumerate(chunk)]
    model.train(was_training)
    return (total, words), attention


def alignment_scores(attention: Sequence[torch.Tensor], pairs: Sequence[AlignedPair]) -> dict[str, float]:
    """AER (argmax hard links), SAER (eq. 23) and argmax agreement of attention with the gold links of
    ``pairs``."""
    sure, possible = [p.sure for p in pairs], [p.possible for p in pairs]
    return {"aer": aer([hard_alignment(a) for a in attention], sure, possible),
            "saer": saer(attention, sure, possible), "argmax_agreement": argmax_agreement(attention, sure)}


def aer_counts(attention: Sequence[torch.Tensor], pairs: Sequence[AlignedPair]) -> dict[str, list[int]]:
    """Per verse, the counts AER sums over the corpus (``1 − (sure_hits + possible_hits) / (links + sure)``,
    :func:`~sparse_tutorial.metrics.aer`), so that an interval can resample verses."""
    out: dict[str, list[int]] = {"sure_hits": [], "possible_hits": [], "links": [], "sure": []}
    for matrix, pair in zip(attention, pairs):
        links, possible = hard_alignment(matrix), pair.possible | pair.sure
        for key, value in (("sure_hits", len(links & pair.sure)), ("possible_hits", len(links & possible)),
                           ("links", len(links)), ("sure", len(pair.sure))):
            out[key].append(value)
    return out


def baseline_alignment_scores(train_pairs: Sequence[AlignedPair], test_pairs: Sequence[AlignedPair],
                              iterations: int = 5) -> dict[str, float]:
    """AER on ``test_pairs`` of the two alignments without attention: the diagonal, and IBM Model 1 trained
    by EM on the sentences of ``train_pairs`` (no gold link used), the pairs the attention models train on."""
    sure, possible = [p.sure for p in test_pairs], [p.possible for p in test_pairs]
    ibm1 = IBMModel1.train([(p.source, p.target) for p in train_pairs], iterations)
    return {"diagonal": aer([diagonal_alignment(len(p.source), len(p.target)) for p in test_pairs], sure, possible),
            "ibm1": aer([ibm1.align(p.source, p.target) for p in test_pairs], sure, possible)}


def run_alignment(build: Callable[[int, int], Seq2Seq], loss_fn: LossFn, alignment: Alignment, epochs: int,
                  batch_tokens: int, lr: float, seed: int, device: torch.device | str, patience: int | None = None
                  ) -> tuple[dict[str, Any], list[torch.Tensor]]:
    """Train ``build(src_vocab_size, tgt_vocab_size)`` Greek→English on ``alignment.train`` with ``loss_fn``
    and score its attention on ``alignment.test``: (scores, the attention matrices of the test verses).

    Training keeps the epoch whose teacher-forced NLL on the dev verses is lowest, and stops when it has not
    improved for ``patience`` epochs (no gold link is used).

    Returns:
        :func:`alignment_scores`; ``dev_nll`` per epoch and ``best_epoch``; the source-shuffle control: the
        test NLL per word with the real sources (``test_nll``) and with other verses' sources
        (``shuffled_source_nll``; a model that reads its source does far worse on them); the per-verse AER
        counts (``verses``, :func:`aer_counts`); and the attention of the first :data:`EXAMPLES` test verses of
        middling length (:func:`~sparse_tutorial.experiments.nmt.data.middling_verses`).
    """
    test = alignment.test
    data = word_data(alignment.train)
    seed_everything(seed)
    model = build(len(data.src_vocab), len(data.tgt_vocab))
    history = train(model, lambda epoch: data.batches(data.train, batch_tokens, shuffle_seed=epoch_seed(seed, epoch)),
                    loss_fn, TrainConfig(epochs=epochs, lr=lr, seed=seed, device=device, patience=patience),
                    dev_fn=lambda m: -forced_nll(m, data.src_vocab, data.tgt_vocab, alignment.dev))
    attention = forced_attention(model, data.src_vocab, data.tgt_vocab, test)
    shuffled = [p._replace(source=s) for p, s in zip(test, shuffled_sources([p.source for p in test], seed))]
    scores = {**alignment_scores(attention, test), "dev_nll": [-e["dev"] for e in history.epochs],
              "best_epoch": history.best_epoch,
              "test_nll": forced_nll(model, data.src_vocab, data.tgt_vocab, test),
              "shuffled_source_nll": forced_nll(model, data.src_vocab, data.tgt_vocab, shuffled),
              "verses": aer_counts(attention, test),
              "examples": [attention[i].tolist() for i in middling_verses(test, EXAMPLES)]}
    return scores, attention
