"""The data of experiment ``summarization`` (chapter 11): Debian package descriptions as document–synopsis
pairs, tokenized and truncated to a profile's lengths, a vocabulary built on the training split, and padded
batches in the pointer-generator's extended vocabulary (each document's own out-of-vocabulary words numbered
after the fixed vocabulary, so that the pointer can copy them).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, Sequence

import numpy as np
import torch
from torch import Tensor

from sparse_tutorial.data import apt_descriptions
from sparse_tutorial.data.text import Vocabulary, tokenize
from sparse_tutorial.models.pointer_generator import extend_source, extend_target


class CorpusSizes(Protocol):
    """The corpus slice of a profile (:class:`sparse_tutorial.experiments.summarization.Sizes` has it)."""

    n_train: int  # training pairs (the rest of the corpus is never touched)
    n_dev: int
    n_test: int
    max_source_len: int  # tokens of the description kept
    max_target_len: int  # tokens of the synopsis kept
    vocab_size: int  # fixed vocabulary incl. specials; everything else is an OOV the pointer may copy


class Example(NamedTuple):
    """One document–summary pair, raw and tokenized (truncated to the profile's lengths)."""

    document: str
    summary: str
    source: list[str]
    target: list[str]


@dataclass
class SummarizationData:
    """Tokenized splits, the vocabulary built on the training split, and where the text came from."""

    train: list[Example]
    dev: list[Example]
    test: list[Example]
    vocab: Vocabulary
    corpus: dict[str, Any]


def make_examples(pairs: Sequence[tuple[str, str]], sizes: CorpusSizes) -> list[Example]:
    """``(document, summary)`` pairs -> :class:`Example` with lower-cased tokens, truncated to the profile."""
    return [Example(document, summary, tokenize(document)[: sizes.max_source_len],
                    tokenize(summary)[: sizes.max_target_len]) for document, summary in pairs]


def build_data(train: Sequence[tuple[str, str]], dev: Sequence[tuple[str, str]], test: Sequence[tuple[str, str]],
               sizes: CorpusSizes, corpus: dict[str, Any], seed: int = 0) -> SummarizationData:
    """A seeded random sample of ``n_train``/``n_dev``/``n_test`` pairs of each split, tokenized, and a
    vocabulary of the ``vocab_size`` most frequent training tokens (documents and summaries together, as
    See et al.). Sampling rather than taking the first pairs matters: the apt corpus is sorted by package."""
    rng = np.random.default_rng(seed)
    splits = [make_examples([pairs[i] for i in sorted(rng.permutation(len(pairs))[:n])], sizes)
              for pairs, n in ((train, sizes.n_train), (dev, sizes.n_dev), (test, sizes.n_test))]
    vocab = Vocabulary.build((tokens for example in splits[0] for tokens in (example.source, example.target)),
                             max_size=sizes.vocab_size)
    return SummarizationData(*splits, vocab=vocab, corpus=corpus)


@functools.lru_cache(maxsize=None)
def load_data(sizes: CorpusSizes, seed: int = 0, verbose: bool = False) -> SummarizationData:
    """The apt package descriptions (:mod:`sparse_tutorial.data.apt_descriptions`; fetch them once with
    ``python -m sparse_tutorial.data fetch apt_descriptions``) at the profile's size, via :func:`build_data`.

    Cached: a sweep loads each profile's data once per process (do not modify what it returns)."""
    corpus = apt_descriptions.load(verbose=verbose)
    info = {"name": corpus.name, "provenance": corpus.provenance.line() if corpus.provenance else None,
            "parse_report": corpus.report.line(), "splits": corpus.sizes()}

    def pairs(split: Sequence[apt_descriptions.SummaryPair]) -> list[tuple[str, str]]:
        return [(pair.document, pair.summary) for pair in split]

    return build_data(pairs(corpus.train), pairs(corpus.dev), pairs(corpus.test), sizes, info, seed)


class SummaryBatch(NamedTuple):
    """Padded tensors of a batch in the pointer-generator's extended vocabulary (all batch-first)."""

    source: Tensor  # (batch, src_len) fixed-vocabulary ids, OOV = <unk>
    source_extended: Tensor  # (batch, src_len) the k-th OOV of a row is vocab_size + k
    source_mask: Tensor  # (batch, src_len) bool, True = real token
    n_extended: int  # vocab_size + the largest number of OOVs of a row
    target_input: Tensor  # (batch, tgt_len) <s> y_1 … y_{n−1}, extended ids
    target: Tensor  # (batch, tgt_len) y_1 … y_n </s>, extended ids
    target_mask: Tensor  # (batch, tgt_len) bool
    oovs: list[list[str]]  # per row, the words behind the extended ids

    def to(self, device: torch.device) -> "SummaryBatch":
        moved = [value.to(device) if isinstance(value, Tensor) else value for value in self]
        return SummaryBatch(*moved)


def make_batch(examples: Sequence[Example], vocab: Vocabulary) -> SummaryBatch:
    """Tensors of a batch: extended ids for copying (:func:`extend_source`, :func:`extend_target`), padding."""
    token_to_id, unk, pad, bos, eos = vocab.token_to_id, vocab.unk_id, vocab.pad_id, vocab.bos_id, vocab.eos_id
    sources, targets, oov_lists = [], [], []
    for example in examples:
        ids, extended, oovs = extend_source(example.source, token_to_id, unk)
        sources.append((ids, extended))
        targets.append(extend_target(example.target, token_to_id, unk, oovs) + [eos])
        oov_lists.append(oovs)
    batch, src_len, tgt_len = len(examples), max(len(s[0]) for s in sources), max(len(t) for t in targets)
    source = torch.full((batch, src_len), pad)
    source_extended = torch.full((batch, src_len), pad)
    target = torch.full((batch, tgt_len), pad)
    for row, ((ids, extended), tgt) in enumerate(zip(sources, targets)):
        source[row, : len(ids)] = torch.tensor(ids)
        source_extended[row, : len(ids)] = torch.tensor(extended)
        target[row, : len(tgt)] = torch.tensor(tgt)
    source_mask = torch.arange(src_len) < torch.tensor([len(s[0]) for s in sources]).unsqueeze(1)
    target_mask = torch.arange(tgt_len) < torch.tensor([len(t) for t in targets]).unsqueeze(1)
    target_input = torch.cat([torch.full((batch, 1), bos), target[:, :-1]], dim=1)
    n_extended = len(token_to_id) + max(len(oovs) for oovs in oov_lists)
    return SummaryBatch(source, source_extended, source_mask, n_extended, target_input, target, target_mask,
                        oov_lists)


def make_batches(examples: Sequence[Example], vocab: Vocabulary, batch_size: int) -> list[SummaryBatch]:
    """Batches of similar source length (less padding), shortest first; :func:`train_system` shuffles them."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].source))
    chunks = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    return [make_batch([examples[i] for i in chunk], vocab) for chunk in chunks]


def copyable_oovs(example: Example, vocab: Vocabulary) -> list[str]:
    """Words of the reference that are out of the vocabulary but in the document: only a pointer gets them."""
    source = set(example.source)
    return [token for token in example.target if token not in vocab and token in source]
