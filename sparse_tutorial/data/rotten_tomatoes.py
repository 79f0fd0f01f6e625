"""Rotten Tomatoes movie-review sentences with human sentiment ratings (chapters 12-14).

Source: PyPI · ``vaderSentiment==3.3.2`` **sdist** · ``additional_resources/hutto_ICWSM_2014.tar.gz`` ·
``hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt`` (Hutto & Gilbert, ICWSM 2014; MIT license).
These are the 10,605 sentence-level snippets of Pang & Lee's Rotten Tomatoes data, the sentences SST was
built from, each rated by about 20 people on -4..+4; the file holds their mean.

Format: one snippet per line, ``id<TAB>mean rating<TAB>text`` (CRLF line ends). A line that does not
split into three fields, or whose rating is not a number, is malformed (counted, reported).

Binary polarity (the label): ``positive`` (1) if the mean rating is > 0, ``negative`` (0) if < 0; a mean of
exactly 0 is neutral and dropped (counted as filtered). Examples are :class:`LabelledText`; splits
80/10/10 by :func:`~sparse_tutorial.data.corpus.split_by_hash` on the snippet id.
"""
from __future__ import annotations

import io
import tarfile
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sparse_tutorial.data.cache import Provenance
from sparse_tutorial.data.corpus import Corpus, ParseReport, corpus_source
from sparse_tutorial.data.fetch import pip_download, store

NAME = "rotten_tomatoes"
REQUIREMENT = "vaderSentiment==3.3.2"
ARCHIVE = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
MEMBER = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
SOURCE = f"PyPI · {REQUIREMENT} (sdist) · additional_resources/hutto_ICWSM_2014.tar.gz · {MEMBER}"
LICENSE = "MIT"
FILE = "movieReviewSnippets_GroundTruth.txt"
LABELS = ["negative", "positive"]


@dataclass(frozen=True)
class LabelledText:
    """A text with its class id (index into the corpus's ``labels``); ``id`` is the corpus's own id and
    ``score`` the rating it was labelled from (``None`` when the corpus has none)."""

    id: str
    text: str
    label: int
    score: float | None = None


def parse(lines: Iterable[str]) -> tuple[list[LabelledText], ParseReport]:
    """Labelled snippets of ``lines`` in the ground-truth format (rules in the module docstring)."""
    report = ParseReport()
    examples = []
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        report.records += 1
        fields = line.split("\t")
        try:
            snippet_id, rating, text = fields
            score = float(rating)
        except ValueError:
            report.bad(number)
            continue
        if not text.strip():
            report.bad(number)
            continue
        if score == 0:
            report.filtered["neutral (mean rating 0)"] += 1
            continue
        examples.append(LabelledText(snippet_id, text.strip(), int(score > 0), score))
    report.kept = len(examples)
    return examples, report


def fetch() -> Provenance:
    """``pip download --no-deps --no-binary :all: vaderSentiment==3.3.2`` and keep the movie snippets."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        sdist = pip_download(REQUIREMENT, Path(tmp), sdist=True)
        with tarfile.open(sdist) as outer:
            inner_bytes = outer.extractfile(ARCHIVE).read()
        with tarfile.open(fileobj=io.BytesIO(inner_bytes)) as inner:
            content = inner.extractfile(MEMBER).read()
    return store(NAME, {FILE: content}, SOURCE, "3.3.2", LICENSE, started, notes={"sdist": sdist.name})


def load(seed: int = 0, path: str | Path | None = None, verbose: bool = True) -> Corpus[LabelledText]:
    """The binary-polarity snippets, split 80/10/10 by ``seed``; ``labels`` = ``["negative", "positive"]`` (the
    arguments of every loader: :mod:`~sparse_tutorial.data.registry`)."""
    source = corpus_source(NAME, FILE, path)
    with open(source.path, encoding="utf-8", newline="") as handle:
        examples, report = parse(handle)
    return source.corpus(examples, report, key=lambda e: e.id, seed=seed, verbose=verbose, labels=list(LABELS))
