"""Word alignment from attention (Zhang et al. 2019, Table III), for experiment ``nmt``.

Greek→English models are trained on the verses of a manually word-aligned corpus; their teacher-forced
attention on the test verses is scored with AER and SAER against the gold sure/possible links (hard links:
the argmax of each target word's attention, :func:`sparse_tutorial.metrics.hard_alignment`), next to two
alignments without attention: the diagonal, and IBM Model 1 trained by EM on the same verses.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from sparse_tutorial.alignment_baselines import IBMModel1, diagonal_alignment
from sparse_tutorial.experiments.nmt_data import BOS_ID, EOS_ID, AlignedPair, TokenVocabulary, word_data
from sparse_tutorial.metrics import aer, argmax_agreement, hard_alignment, saer
from sparse_tutorial.models.seq2seq import Seq2Seq, make_batch
from sparse_tutorial.profiles import seed_everything
from sparse_tutorial.training import LossFn, TrainConfig, epoch_seed, train

Alignment = tuple[list[AlignedPair], list[AlignedPair], dict[str, Any]]
"""Greek→English training and test verses with gold links, and their provenance."""


def forced_attention(model: Seq2Seq, src_vocab: TokenVocabulary, tgt_vocab: TokenVocabulary,
                     pairs: Sequence[AlignedPair]) -> list[torch.Tensor]:
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


def run_alignment(build: Callable[[int, int], Seq2Seq], loss_fn: LossFn, train_pairs: Sequence[AlignedPair],
                  test_pairs: Sequence[AlignedPair], epochs: int, batch_tokens: int, lr: float, seed: int,
                  device: torch.device | str) -> tuple[dict[str, float], list[torch.Tensor]]:
    """Train ``build(src_vocab_size, tgt_vocab_size)`` Greek→English on ``train_pairs`` with ``loss_fn`` (no
    dev set: ``epochs`` epochs) and score its attention on ``test_pairs``: (:func:`alignment_scores`, the
    attention matrices)."""
    data = word_data(train_pairs)
    seed_everything(seed)
    model = build(len(data.src_vocab), len(data.tgt_vocab))
    train(model, lambda epoch: data.batches(data.train, batch_tokens, shuffle_seed=epoch_seed(seed, epoch)), loss_fn,
          TrainConfig(epochs=epochs, lr=lr, seed=seed, device=device))
    attention = forced_attention(model, data.src_vocab, data.tgt_vocab, test_pairs)
    return alignment_scores(attention, test_pairs), attention
