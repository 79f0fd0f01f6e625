"""The corpus of experiment ``alignment`` (Zhang et al. 2019, Table III): Greek→English New Testament
verses with manual word alignments (:mod:`sparse_tutorial.data.bible_alignments`: the SBL Greek text and the
Berean Standard Bible).

Alignment stays at the word level, because the gold links join words. Each Greek word may be cut to a crude
stem (:func:`greek_stem`), which maps the many inflected forms of a word to fewer, more frequent source types.
An attention model learns where to look from translating, not from the links, so its training verses may
also be paired with the other English versions of :mod:`sparse_tutorial.data.bible` (WEB, KJV, BBE;
``extra_targets``): four translations of every training verse instead of one. Links are scored on the test
verses only, against the Berean Standard Bible they were made for; dev verses (which stop training) and
test verses get no extra translations. The test verses are a seeded random sample of the test split's verses
that fit ``max_len`` (:func:`~sparse_tutorial.data.sampling.stratified_sample`, every verse one class), never
its first verses: the split is in book order, so its first verses would all come from the Gospels. When
``n_test`` is at least their number (the medium and full profiles) the sample is all of them.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from sparse_tutorial.data import CORPORA, Vocabulary, load
from sparse_tutorial.data.bible import ENGLISH
from sparse_tutorial.data.cache import cache_dir
from sparse_tutorial.data.sampling import stratified_sample
from sparse_tutorial.experiments.nmt.data import Pair, TranslationData

ALIGNMENT_CORPUS = "bible_alignments"
"""The data package's name of the manually word-aligned Greek-English corpus."""

TEST_SAMPLE_SEED = 0
"""The seed of the test verses' sample, the same for every aligner and training seed."""


class AlignedPair(NamedTuple):
    """A pair of word lists with gold alignment: ``(source_index, target_index)`` sure and possible links."""

    source: list[str]
    target: list[str]
    sure: set[tuple[int, int]]
    possible: set[tuple[int, int]]


class Alignment(NamedTuple):
    """Greek→English verses for training (extra translations without links), for stopping training (dev)
    and for scoring (test, with gold links), and their provenance."""

    train: list[AlignedPair]
    dev: list[AlignedPair]
    test: list[AlignedPair]
    provenance: dict[str, Any]


@dataclass(frozen=True)
class AlignmentCorpusSizes:
    """Which aligned verses a profile uses.

    Attributes:
        n_train, n_test: aligned verses kept for training (the dev verses included) and for the test.
        max_len: verses longer than this on either side (in words) are left out.
        n_dev: the last training verses, held out to stop training (their gold links are not used).
        greek_stem: with a length, each Greek word becomes its first ``greek_stem`` letters without accents;
            IBM Model 1 reads the same tokens.
        extra_targets: also train on the WEB, KJV and BBE translations of each training verse.
    """

    n_train: int
    n_test: int
    max_len: int
    n_dev: int
    greek_stem: int | None = None
    extra_targets: bool = False


def greek_stem(word: str, letters: int) -> str:
    """``word`` lower-cased without accents or breathings, cut to its first ``letters`` letters: a crude stem
    that maps the many inflected forms of a Greek word to fewer source types (λόγος, λόγου, λόγῳ → λογος,
    λογου, λογω at 6 letters; ἀγαπητοί → αγαπητ)."""
    plain = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if not unicodedata.combining(c))
    return plain[:letters]


def english_words(text: str) -> list[str]:
    """The lower-cased words of an English verse, punctuation dropped (as the aligned corpus's targets)."""
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())


def bible_reference(verse: str) -> str:
    """The aligned corpus's verse id (``"40001001"``: book, chapter, verse) as the Bible corpus writes it
    (``"40.1.1"``)."""
    return f"{int(verse[:2])}.{int(verse[2:5])}.{int(verse[5:])}"


def load_alignment_data(sizes: AlignmentCorpusSizes) -> Alignment:
    """The aligned verses of ``sizes``, words lower-cased (see the module docstring): training verses from the
    corpus's training and dev splits, the last ``n_dev`` of them held out as dev, test verses from its test
    split."""
    if ALIGNMENT_CORPUS not in CORPORA:
        raise LookupError(f"the data package has no corpus {ALIGNMENT_CORPUS!r}")
    if not 0 < sizes.n_dev < sizes.n_train:
        raise ValueError(f"n_dev must hold out some but not all of the {sizes.n_train} training verses, got {sizes.n_dev}")
    corpus = load(ALIGNMENT_CORPUS, verbose=False)
    english = {}
    if sizes.extra_targets:
        bible = load("bible", verbose=False)
        english = {v.verse: v.targets for split in (bible.train, bible.dev, bible.test) for v in split}

    def source(words: Sequence[str]) -> list[str]:
        return [w.lower() if sizes.greek_stem is None else greek_stem(w, sizes.greek_stem) for w in words]

    def kept(verses: Sequence[Any], n: int) -> list[Any]:
        return [v for v in verses if max(len(v.source_tokens), len(v.target_tokens)) <= sizes.max_len][:n]

    def aligned(v: Any) -> AlignedPair:
        return AlignedPair(source(v.source_tokens), [w.lower() for w in v.target_tokens],
                           set(map(tuple, v.sure)), set(map(tuple, v.possible)))

    training = kept(corpus.train + corpus.dev, sizes.n_train)
    train_verses, dev_verses = training[:len(training) - sizes.n_dev], training[len(training) - sizes.n_dev:]
    extra = [AlignedPair(source(v.source_tokens), words, set(), set())
             for v in train_verses for text in english.get(bible_reference(v.verse), ())
             if 0 < len(words := english_words(text)) <= sizes.max_len]
    provenance = asdict(corpus.provenance) if corpus.provenance is not None else {"name": corpus.name}
    fitting = kept(corpus.test, len(corpus.test))
    tested = stratified_sample([0] * len(fitting), sizes.n_test, seed=TEST_SAMPLE_SEED, split="aligned test verses")
    return Alignment([aligned(v) for v in train_verses] + extra, [aligned(v) for v in dev_verses],
                     [aligned(fitting[i]) for i in tested.indices],
                     {**provenance, "parse_report": corpus.report.line(), "max_len": sizes.max_len,
                      "source_tokens": "words" if sizes.greek_stem is None else
                      f"the first {sizes.greek_stem} letters of each word, accents removed",
                      "training_verses": len(train_verses), "extra_translations": len(extra),
                      "extra_versions": list(ENGLISH) if sizes.extra_targets else []})


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
