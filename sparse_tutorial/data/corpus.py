"""What every loader returns: a :class:`Corpus` of train/dev/test examples, its provenance and parse report.

Splits are fixed by a seed and independent of library versions: every example has a *key* (its text, or
its id), the examples are ordered by ``sha256(f"{seed}:{key}")``, and the first ``round(test_fraction * n)``
go to test, the next ``round(dev_fraction * n)`` to dev, the rest to train (each split then keeps the
corpus's own order). Because the position depends only on the example's own key, a corpus that gains or
loses a few examples (apt descriptions change over time) keeps most of its split assignments.

For the source-shuffle control of the translation chapters, :func:`shuffled_sources` gives every example
the source of another one (a seeded derangement): a model that scores as well on those as on the real
sources does not use its source.

A loader reads the cached files of its corpus, or the files a test gives it: :func:`corpus_source` says which
(and verifies the cache); :meth:`CorpusSource.corpus` splits what was parsed into a :class:`Corpus`.

Parsing counts everything it does not keep: :class:`ParseReport` holds the number of records read, the
malformed ones (with their first line numbers) and those dropped by a documented filter, per reason.
"""
from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from sparse_tutorial.data.cache import Provenance, corpus_dir, verify

T = TypeVar("T")


class EmptyCorpusError(ValueError):
    """Parsing produced no examples (wrong file, or every record malformed or filtered)."""


@dataclass
class ParseReport:
    """Counts of one parse: ``records`` read, ``kept``, ``malformed`` (first line numbers in
    ``malformed_lines``), and examples ``filtered`` out by a documented rule, per reason."""

    records: int = 0
    kept: int = 0
    malformed: int = 0
    malformed_lines: list[int] = field(default_factory=list)
    filtered: Counter = field(default_factory=Counter)

    def bad(self, line_number: int) -> None:
        """Count one malformed record found at ``line_number`` (1-based)."""
        self.malformed += 1
        if len(self.malformed_lines) < 10:
            self.malformed_lines.append(line_number)

    def line(self) -> str:
        """One line: records, kept, malformed (with the first line numbers) and filtered per reason."""
        text = f"{self.records} records, {self.kept} kept, {self.malformed} malformed"
        if self.malformed_lines:
            text += f" (first at lines {self.malformed_lines[:5]})"
        if self.filtered:
            text += ", filtered: " + ", ".join(f"{n} {reason}" for reason, n in sorted(self.filtered.items()))
        return text

    def require_examples(self, what: str) -> None:
        """Raise :class:`EmptyCorpusError` when nothing was kept."""
        if self.kept == 0:
            raise EmptyCorpusError(f"{what}: no examples kept ({self.line()})")


@dataclass
class Corpus(Generic[T]):
    """A loaded corpus. ``train``/``dev``/``test`` are lists of the corpus's example type; ``labels`` names
    the classes of a classification corpus (index = label id), else ``None``."""

    name: str
    train: list[T]
    dev: list[T]
    test: list[T]
    provenance: Provenance | None
    report: ParseReport
    labels: list[str] | None = None

    def sizes(self) -> dict[str, int]:
        """``{"train": n, "dev": n, "test": n}``."""
        return {"train": len(self.train), "dev": len(self.dev), "test": len(self.test)}

    def describe(self) -> str:
        """The provenance line, the parse report and the split sizes."""
        head = self.provenance.line() if self.provenance else f"[data] {self.name} (from given files)"
        return f"{head}\n[data] {self.name}: {self.report.line()}; splits {self.sizes()}"


@dataclass(frozen=True)
class CorpusSource:
    """Where a loader reads corpus ``name`` from: ``path`` (a file or a folder) and its ``provenance`` (None for
    files a caller gave instead of the cache)."""

    name: str
    path: Path
    provenance: Provenance | None

    def corpus(self, examples: Sequence[T], report: ParseReport, key: Callable[[T], str], seed: int = 0,
               verbose: bool = True, labels: list[str] | None = None,
               test: list[T] | None = None) -> Corpus[T]:
        """The :class:`Corpus` of the parsed ``examples``: split 80/10/10 by :func:`split_by_hash` on ``key``,
        or, for a corpus with its own ``test`` set, 90/10 into train and dev. Printed (its provenance, the
        parse report and the split sizes) when ``verbose``.

        Raises:
            EmptyCorpusError: nothing was kept.
        """
        report.require_examples(f"{self.name} ({self.path})")
        train, dev, split_test = split_by_hash(examples, key=key, seed=seed,
                                               test_fraction=0.0 if test is not None else 0.1)
        corpus = Corpus(self.name, train, dev, split_test if test is None else test, self.provenance, report,
                        labels)
        if verbose:
            print(corpus.describe())
        return corpus


def corpus_source(name: str, file_name: str | None = None, given: str | Path | None = None) -> CorpusSource:
    """Where a loader reads corpus ``name`` from: ``given`` (a file or folder the caller chose, e.g. a test
    fixture) when it is set, else the cached ``<cache>/<name>/<file_name>`` (the corpus folder when
    ``file_name`` is None), whose files are verified first.

    Raises:
        CorpusNotFetchedError: the corpus is not (or not intact) in the cache, naming the fetch command.
    """
    if given is not None:
        return CorpusSource(name, Path(given), None)
    provenance = verify(name)
    folder = corpus_dir(name)
    return CorpusSource(name, folder / file_name if file_name else folder, provenance)


def split_by_hash(examples: Sequence[T], key: Callable[[T], str], dev_fraction: float = 0.1,
                  test_fraction: float = 0.1, seed: int = 0) -> tuple[list[T], list[T], list[T]]:
    """``(train, dev, test)`` by the seeded hash order described in the module docstring."""
    if not 0 <= dev_fraction < 1 or not 0 <= test_fraction < 1 or dev_fraction + test_fraction >= 1:
        raise ValueError(f"dev_fraction ({dev_fraction}) and test_fraction ({test_fraction}) must be in [0, 1) "
                         "with a sum below 1")
    n = len(examples)
    order = sorted(range(n), key=lambda i: (hashlib.sha256(f"{seed}:{key(examples[i])}".encode()).digest(), i))
    n_test, n_dev = round(test_fraction * n), round(dev_fraction * n)
    test_ids, dev_ids = set(order[:n_test]), set(order[n_test:n_test + n_dev])
    train = [e for i, e in enumerate(examples) if i not in test_ids and i not in dev_ids]
    dev = [e for i, e in enumerate(examples) if i in dev_ids]
    test = [e for i, e in enumerate(examples) if i in test_ids]
    return train, dev, test


def shuffled_sources(sources: Sequence[T], seed: int = 0) -> list[T]:
    """``sources`` reordered so that no position keeps its own item (a derangement), the same for a seed.

    The positions are shuffled with ``random.Random(seed)`` and each one then takes the item of the next
    position in that shuffled order (the last takes the first's): one cycle through all positions, so for
    ``n >= 2`` none is left in place. Positions are what is deranged: two equal items (a verse that occurs
    twice) may still meet. Pair the result with the unchanged targets:
    ``zip(shuffled_sources(sources, seed), targets)``.

    Args:
        sources: the items to reorder, ``n >= 2`` of them.
        seed: seeds the shuffle.
    """
    if len(sources) < 2:
        raise ValueError(f"sources must hold at least 2 items to give each another's, got {len(sources)}")
    order = list(range(len(sources)))
    random.Random(seed).shuffle(order)
    shuffled = list(sources)
    for position, donor in zip(order, order[1:] + order[:1]):
        shuffled[position] = sources[donor]
    return shuffled
