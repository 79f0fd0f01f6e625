"""The corpus of experiment ``alignment`` (Zhang et al. 2019, Table III): Greek→English New Testament
verses with manual word alignments (:mod:`sparse_tutorial.data.bible_alignments`).

Alignment stays at the word level, because the gold links join words. Each Greek word may be cut to a crude
stem (:func:`greek_stem`), which maps the many inflected forms of a word to fewer, more frequent source types.
"""
from __future__ import annotations

import functools
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from sparse_tutorial.data import CORPORA, Vocabulary, load
from sparse_tutorial.data.cache import cache_dir
from sparse_tutorial.experiments.nmt_data import Pair, TranslationData

ALIGNMENT_CORPUS = "bible_alignments"
"""The data package's name of the manually word-aligned Greek-English corpus."""


class AlignedPair(NamedTuple):
    """A pair of word lists with gold alignment: ``(source_index, target_index)`` sure and possible links."""

    source: list[str]
    target: list[str]
    sure: set[tuple[int, int]]
    possible: set[tuple[int, int]]


Alignment = tuple[list[AlignedPair], list[AlignedPair], dict[str, Any]]
"""Greek→English training and test verses with gold links, and their provenance."""


@dataclass(frozen=True)
class AlignmentCorpusSizes:
    """Which aligned verses a profile uses.

    Attributes:
        n_train, n_test: verses kept for training (the dev verses included) and for the test.
        max_len: verses longer than this on either side (in words) are left out.
        n_dev: the last training verses, held out to stop training (their gold links are not used).
        greek_stem: with a length, each Greek word becomes its first ``greek_stem`` letters without accents;
            IBM Model 1 reads the same tokens.
    """

    n_train: int
    n_test: int
    max_len: int
    n_dev: int = 0
    greek_stem: int | None = None


def greek_stem(word: str, letters: int) -> str:
    """``word`` lower-cased without accents or breathings, cut to its first ``letters`` letters: a crude stem
    that maps the many inflected forms of a Greek word to fewer source types (λόγος, λόγου, λόγῳ → λογος,
    λογου, λογω at 6 letters; ἀγαπητοί → αγαπητ)."""
    plain = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if not unicodedata.combining(c))
    return plain[:letters]


def load_alignment_data(sizes: AlignmentCorpusSizes) -> Alignment:
    """The aligned verses of ``sizes``, words lower-cased: (train, test, provenance); test comes from the
    corpus's test split, train from its training and dev splits."""
    if ALIGNMENT_CORPUS not in CORPORA:
        raise LookupError(f"the data package has no corpus {ALIGNMENT_CORPUS!r}")
    corpus = load(ALIGNMENT_CORPUS, verbose=False)

    def source_word(word: str) -> str:
        return word.lower() if sizes.greek_stem is None else greek_stem(word, sizes.greek_stem)

    def convert(verses: Sequence[Any], n: int) -> list[AlignedPair]:
        out = [AlignedPair([source_word(w) for w in v.source_tokens], [w.lower() for w in v.target_tokens],
                           set(map(tuple, v.sure)), set(map(tuple, v.possible)))
               for v in verses if max(len(v.source_tokens), len(v.target_tokens)) <= sizes.max_len]
        return out[:n]

    train = convert(corpus.train + corpus.dev, sizes.n_train)
    test = convert(corpus.test, sizes.n_test)
    provenance = asdict(corpus.provenance) if corpus.provenance is not None else {"name": corpus.name}
    return train, test, {**provenance, "parse_report": corpus.report.line(), "max_len": sizes.max_len,
                         "source_tokens": "words" if sizes.greek_stem is None else
                         f"the first {sizes.greek_stem} letters of each word, accents removed"}


@functools.lru_cache(maxsize=None)
def _loaded(sizes: AlignmentCorpusSizes, cache: Path) -> Alignment:
    return load_alignment_data(sizes)


def alignment_corpus(sizes: AlignmentCorpusSizes) -> Alignment:
    """:func:`load_alignment_data`, once per process for each ``sizes`` and data cache folder."""
    return _loaded(sizes, cache_dir())


def word_data(pairs: Sequence[AlignedPair], min_freq: int = 1) -> TranslationData:
    """Word-level training data from aligned verses (vocabularies from ``pairs``), for the attention models."""
    train = [Pair(p.source, p.target, [" ".join(p.target)]) for p in pairs]
    return TranslationData(train, [], [], Vocabulary.build([p.source for p in train], min_freq),
                           Vocabulary.build([p.target for p in train], min_freq), {})
