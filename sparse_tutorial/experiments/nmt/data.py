"""The corpus of experiment ``nmt`` (chapters 9-10): Bible German→English in BPE pieces.

Translation: the training split holds every verse twice, once from each German version (Elberfelder 1932
and Schlachter 1951, :mod:`sparse_tutorial.data.bible`) with the World English Bible as target, which
doubles the training pairs at no cost in test difficulty; dev and test translate the Elberfelder only and
are scored against all three English versions (WEB, KJV, BBE). One joint BPE model
(:class:`~sparse_tutorial.data.subwords.SubwordVocabulary`) is learned on the training split's German and
English sentences.
"""
from __future__ import annotations

import functools
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol, Sequence

from sparse_tutorial.data import Vocabulary, load
from sparse_tutorial.data.cache import cache_dir
from sparse_tutorial.data.subwords import SubwordVocabulary
from sparse_tutorial.metrics import corpus_bleu, corpus_chrf
from sparse_tutorial.models.seq2seq import TranslationBatch, make_batch

BOS_ID, EOS_ID = Vocabulary.bos_id, Vocabulary.eos_id


class TokenVocabulary(Protocol):
    """What the experiment needs of a vocabulary: :class:`~sparse_tutorial.data.text.Vocabulary` (words) and
    :class:`~sparse_tutorial.data.subwords.SubwordVocabulary` (pieces) both have it."""

    def encode(self, tokens: Sequence[str]) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> list[str]: ...

    def __len__(self) -> int: ...


class Pair(NamedTuple):
    """A sentence pair: source and target tokens (BPE pieces, or words for alignment) and the reference
    texts that BLEU scores against."""

    source: list[str]
    target: list[str]
    references: list[str]


@dataclass(frozen=True)
class CorpusSizes:
    """Which verses of the corpora a profile uses.

    Attributes:
        n_train, n_dev, n_test: pairs kept per split (training pairs count both German versions).
        max_len: pairs longer than this on either side (in pieces) are left out.
        vocab_size: BPE pieces of the joint vocabulary.
        german: the German versions that are training sources.
        sample_seed: the seed with which dev and test are drawn at random from the whole Bible's splits
            (never their first verses: the splits are in canonical order, Genesis first).
    """

    n_train: int
    n_dev: int
    n_test: int
    max_len: int
    vocab_size: int
    german: tuple[str, ...]
    sample_seed: int = 0


@dataclass
class TranslationData:
    """Splits, vocabularies and provenance of one translation corpus."""

    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]
    src_vocab: TokenVocabulary
    tgt_vocab: TokenVocabulary
    corpus: dict[str, Any]

    def batches(self, pairs: Sequence[Pair], batch_tokens: int, shuffle_seed: int | None = None
                ) -> list[TranslationBatch]:
        """Length-bucketed batches of ``pairs`` of about ``batch_tokens`` target tokens each (pairs sorted by
        source then target length, cut into batches, batch order shuffled with ``shuffle_seed``)."""
        order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i].source), len(pairs[i].target)))
        chunks, chunk, tokens = [], [], 0
        for i in order:
            chunk.append(i)
            tokens += len(pairs[i].target) + 1
            if tokens >= batch_tokens:
                chunks.append(chunk)
                chunk, tokens = [], 0
        chunks += [chunk] if chunk else []
        if shuffle_seed is not None:
            random.Random(shuffle_seed).shuffle(chunks)
        return [make_batch([(self.src_vocab.encode(pairs[i].source), self.tgt_vocab.encode(pairs[i].target))
                            for i in chunk], bos=BOS_ID, eos=EOS_ID) for chunk in chunks]

    def detokenize(self, tokens: Sequence[str]) -> str:
        """The text of output ``tokens``: BPE pieces joined, words separated by spaces."""
        if isinstance(self.tgt_vocab, SubwordVocabulary):
            return self.tgt_vocab.detokenize(tokens)
        return " ".join(tokens)

    def bleu(self, outputs: Sequence[Sequence[str]], pairs: Sequence[Pair]) -> float:
        """Case-insensitive corpus BLEU (sacrebleu, 13a tokenizer) of output tokens against every reference."""
        return corpus_bleu([self.detokenize(o) for o in outputs], [p.references for p in pairs])

    def chrf(self, outputs: Sequence[Sequence[str]], pairs: Sequence[Pair]) -> float:
        """Case-insensitive corpus chrF of output tokens against every reference."""
        return corpus_chrf([self.detokenize(o) for o in outputs], [p.references for p in pairs])


def load_translation_data(sizes: CorpusSizes) -> TranslationData:
    """The Bible pairs of the module docstring, in the corpus's own hash split, pairs longer than
    ``sizes.max_len`` pieces on either side (first reference) left out, sliced to ``sizes``. Dev and test
    leave out sources that also occur in the training split (the Bible repeats some verses word for word)."""
    versions = {german: load("bible", german=german, verbose=False) for german in sizes.german}
    first = versions[sizes.german[0]]
    vocab = SubwordVocabulary.train([text for corpus in versions.values() for p in corpus.train
                                     for text in (p.source, p.targets[0])], sizes.vocab_size)

    def pairs(split: Sequence[Any]) -> list[Pair]:
        out = []
        for p in split:
            source, target = vocab.tokenize(p.source), vocab.tokenize(p.targets[0])
            if len(source) <= sizes.max_len and len(target) <= sizes.max_len:
                out.append(Pair(source, target, [t.lower() for t in p.targets]))
        return out

    train = [pair for corpus in versions.values() for pair in pairs(corpus.train)]
    random.Random(0).shuffle(train)  # both versions in every slice of the training split
    seen = {tuple(p.source) for p in train}
    dev, test = ([p for p in pairs(split) if tuple(p.source) not in seen] for split in (first.dev, first.test))
    train, dev, test = (train[:sizes.n_train], _drawn(dev, sizes.n_dev, sizes.sample_seed),
                        _drawn(test, sizes.n_test, sizes.sample_seed))
    provenance = asdict(first.provenance) if first.provenance is not None else {"name": first.name}
    info = {**provenance, "parse_report": first.report.line(), "splits_in_corpus": first.sizes(),
            "german_training_sources": list(sizes.german), "test_source": sizes.german[0],
            "max_len": sizes.max_len, "pairs_used": {"train": len(train), "dev": len(dev), "test": len(test)},
            "tokenizer": f"joint sentencepiece BPE, {len(vocab)} pieces, lower-cased"}
    return TranslationData(train, dev, test, vocab, vocab, info)


def middling_verses(pairs: Sequence[Any], count: int) -> list[int]:
    """Indices of the first ``count`` of ``pairs`` (anything with a ``source``) of middling length, 8-14
    source tokens, then of the first others: the verses whose attention a run stores for the heatmaps."""
    middling = [i for i, p in enumerate(pairs) if 8 <= len(p.source) <= 14]
    return (middling + [i for i in range(len(pairs)) if i not in middling])[:count]


def _drawn(pairs: list[Pair], n: int, seed: int) -> list[Pair]:
    """``n`` of ``pairs`` drawn at random with ``seed`` (all of them when there are fewer), kept in their order."""
    return [pairs[i] for i in sorted(random.Random(seed).sample(range(len(pairs)), min(n, len(pairs))))]


@functools.lru_cache(maxsize=None)
def _loaded(sizes: CorpusSizes, cache: Path) -> TranslationData:
    return load_translation_data(sizes)


def translation_corpus(sizes: CorpusSizes) -> TranslationData:
    """:func:`load_translation_data`, once per process for each ``sizes`` and data cache folder (so a corpus
    that is not fetched fails before any training)."""
    return _loaded(sizes, cache_dir())
