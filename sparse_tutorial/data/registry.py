"""The corpora of the book by name, and fetching them: ``python -m sparse_tutorial.data fetch [NAME...]``.

Each corpus module (``ding``, ``rotten_tomatoes``, ...) has ``fetch() -> Provenance`` and
``load(seed=0, ...) -> Corpus``. :func:`fetch` skips a corpus already in the cache with intact files
(SHA-256 checked), so running it twice costs nothing the second time.

Every ``load`` takes ``seed``, the split seed (the sizes the appendix documents are for ``seed=0``);
``path`` (or ``directory`` for a corpus of several files), files to parse instead of the cached ones (tests
use fixtures); and ``verbose``, print the provenance line, the parse report and the split sizes. Its own
docstring names only what else it takes.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from types import ModuleType

from sparse_tutorial.atomic import writable_directory
from sparse_tutorial.data import (
    apt_descriptions, bible, bible_alignments, ding, newsgroups, rotten_tomatoes, yeast)
from sparse_tutorial.data.cache import CACHE_ENV, CorpusNotFetchedError, Provenance, cache_dir, verify
from sparse_tutorial.data.fetch import FetchError

CORPORA: dict[str, ModuleType] = {module.NAME: module for module in (
    ding, bible, bible_alignments, apt_descriptions, rotten_tomatoes, newsgroups, yeast)}
"""Corpus name -> module with ``fetch()`` and ``load()``; all of them are used by the book."""


def _module(name: str) -> ModuleType:
    if name not in CORPORA:
        raise KeyError(f"unknown corpus {name!r}; known corpora: {sorted(CORPORA)}")
    return CORPORA[name]


def fetch(names: Sequence[str] | None = None, force: bool = False,
          verbose: bool = True) -> dict[str, Provenance]:
    """Fetch the corpora ``names`` (``None`` = every corpus of the book) into the cache.

    A corpus already cached with intact files is skipped unless ``force``. Returns the provenance of each.

    Raises:
        UnwritableDirectoryError: the cache cannot be written (checked before anything is downloaded).
        FetchError: after trying every corpus, naming those that failed (e.g. no apt on this machine).
    """
    chosen = list(CORPORA) if not names else list(dict.fromkeys(names))
    modules = {name: _module(name) for name in chosen}
    provenances, failures = {}, {}
    for name, module in modules.items():
        if not force:
            try:
                provenances[name] = verify(name)
                if verbose:
                    print(f"[data] {name}: cached and verified, skipped")
                continue
            except CorpusNotFetchedError:
                pass
        writable_directory(cache_dir(), f"the corpus cache (${CACHE_ENV} chooses another)")
        started = time.perf_counter()
        try:
            provenances[name] = module.fetch()
        except FetchError as error:
            failures[name] = str(error)
            if verbose:
                print(f"[data] {name}: FAILED: {error}")
            continue
        if verbose:
            print(f"{provenances[name].line()}\n[data] {name}: fetched in {time.perf_counter() - started:.1f} s")
    if failures:
        raise FetchError(f"could not fetch {sorted(failures)} (the other corpora were fetched): "
                         + "; ".join(f"{name}: {message}" for name, message in failures.items()))
    return provenances


def load(name: str, **kwargs):
    """``CORPORA[name].load(**kwargs)``: the :class:`~sparse_tutorial.data.corpus.Corpus` of ``name``."""
    return _module(name).load(**kwargs)
