"""Manual Greek-English word alignments of the New Testament, for AER (chapter 10).

Source: PyPI · ``bible-alignments==0.4.2`` wheel (Clear Bible; data CC-BY-4.0):
``data/eng/alignments/BSB/SBLGNT-BSB-manual.json`` (manual alignments, Scripture Burrito 0.3),
``data/sources/SBLGNT.tsv`` (the Greek words of the SBL Greek New Testament, CC-BY-4.0) and
``data/eng/targets/BSB/nt_BSB.tsv`` (the English words of the Berean Standard Bible, public domain).

Formats: both TSVs have a header and one word per line; a word id is ``BBCCCVVVWWW`` (book, chapter,
verse, word; Greek ids carry a leading ``n``). The Greek verse of a word is its id's ``BBCCCVVV``; an
English word names the Greek verse it belongs to in its ``source_verse`` column (the two versifications
differ in a few places). English words marked ``exclude = y`` (punctuation) are left out. The JSON holds
``records``, each ``{"source": [greek ids], "target": [english ids], "meta": {"id": "BBCCCVVV.NNN",
"process": "manual", "status": "created"}}``: the words of a record are aligned to each other, i.e. every
(source, target) pair of a record is a link.

Sure and possible links: every record of 0.4.2 has ``process = "manual"`` and ``status = "created"``;
the data makes no sure/possible distinction, so all links are *sure*, and ``possible`` equals ``sure``
(AER with P = S is 1 - F1 of the links).

Examples are :class:`AlignedVerse`, one per Greek verse that has at least one record. A record naming a
word id missing from the TSVs, or with no source or no target word, is malformed; a link between words of
different verses (a handful, where the versifications differ) or to an excluded word is counted as
filtered. Splits 80/10/10 by :func:`~sparse_tutorial.data.corpus.split_by_hash` on the verse id.
"""
from __future__ import annotations

import csv
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparse_tutorial.data.cache import Provenance
from sparse_tutorial.data.corpus import Corpus, ParseReport, corpus_source
from sparse_tutorial.data.fetch import WHEEL_PYTHON, read_wheel, store

NAME = "bible_alignments"
REQUIREMENT = "bible-alignments==0.4.2"
MEMBERS = {
    "alignments": "data/eng/alignments/BSB/SBLGNT-BSB-manual.json",
    "source": "data/sources/SBLGNT.tsv",
    "target": "data/eng/targets/BSB/nt_BSB.tsv",
}
SOURCE = ("PyPI · bible-alignments==0.4.2 (wheel) · data/eng/alignments/BSB/SBLGNT-BSB-manual.json, "
          "data/sources/SBLGNT.tsv, data/eng/targets/BSB/nt_BSB.tsv")
LICENSE = "CC-BY-4.0 (alignments, SBLGNT); BSB public domain"
FILES = {"alignments": "SBLGNT-BSB-manual.json", "source": "SBLGNT.tsv", "target": "nt_BSB.tsv"}


@dataclass(frozen=True)
class AlignedVerse:
    """One Greek verse and its English translation with gold word alignments.

    Attributes:
        verse: ``BBCCCVVV`` (book 40 = Matthew ... 66 = Revelation).
        source_tokens: the Greek words, in order.
        target_tokens: the English words, in order (punctuation excluded).
        sure: sorted ``(source index, target index)`` links.
        possible: sorted links, a superset of ``sure`` (equal to it for this data, see module docstring).
    """

    verse: str
    source_tokens: list[str]
    target_tokens: list[str]
    sure: list[tuple[int, int]]
    possible: list[tuple[int, int]]


def _words(lines: Iterable[str], verse_of) -> tuple[dict[str, tuple[str, int]], dict[str, list[str]], set[str]]:
    """``id -> (verse, position)``, ``verse -> words`` and the excluded ids of one word TSV."""
    position: dict[str, tuple[str, int]] = {}
    words: dict[str, list[str]] = {}
    excluded: set[str] = set()
    for row in csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE):
        if row.get("exclude") == "y":
            excluded.add(row["id"])
            continue
        verse = verse_of(row)
        tokens = words.setdefault(verse, [])
        position[row["id"]] = (verse, len(tokens))
        tokens.append(row["text"])
    return position, words, excluded


def parse(alignments: dict[str, Any], source_lines: Iterable[str],
          target_lines: Iterable[str]) -> tuple[list[AlignedVerse], ParseReport]:
    """Aligned verses from the alignment JSON (already decoded) and the two word TSVs."""
    source_position, source_words, _ = _words(source_lines, lambda row: row["id"][1:9])
    target_position, target_words, target_excluded = _words(target_lines, lambda row: row["source_verse"])
    report = ParseReport()
    links: dict[str, set[tuple[int, int]]] = {}
    for number, record in enumerate(alignments.get("records", []), start=1):
        report.records += 1
        try:
            verse = record["meta"]["id"].split(".")[0]
            sources, targets = record["source"], record["target"]
        except (KeyError, TypeError, AttributeError):
            report.bad(number)
            continue
        unknown = [i for i in sources if i not in source_position] + \
                  [i for i in targets if i not in target_position and i not in target_excluded]
        if not sources or not targets or unknown:
            report.bad(number)
            continue
        verse_links = links.setdefault(verse, set())
        for source_id in sources:
            for target_id in targets:
                if target_id in target_excluded:
                    report.filtered["links to excluded (punctuation) words"] += 1
                    continue
                (source_verse, i), (target_verse, j) = source_position[source_id], target_position[target_id]
                if source_verse != verse or target_verse != verse:
                    report.filtered["links across verses"] += 1
                    continue
                verse_links.add((i, j))
    verses = []
    for verse in sorted(links):
        if not links[verse]:
            report.filtered["verses without links"] += 1
            continue
        sure = sorted(links[verse])
        verses.append(AlignedVerse(verse, source_words[verse], target_words.get(verse, []), sure, list(sure)))
    report.kept = len(verses)
    return verses, report


def fetch() -> Provenance:
    """``pip download --no-deps bible-alignments==0.4.2`` (the wheel requires Python < 3.12, so the Python
    3.11 wheel is asked for: :data:`~sparse_tutorial.data.fetch.WHEEL_PYTHON`) and keep the alignments and
    both word lists."""
    started = time.perf_counter()
    contents, wheel = read_wheel(REQUIREMENT, {FILES[key]: member for key, member in MEMBERS.items()},
                                 extra_args=WHEEL_PYTHON)
    return store(NAME, contents, SOURCE, "0.4.2", LICENSE, started, notes={"wheel": wheel})


def load(seed: int = 0, directory: str | Path | None = None, verbose: bool = True) -> Corpus[AlignedVerse]:
    """The aligned verses, split 80/10/10 by ``seed``; ``directory`` holds the three files of :data:`FILES` (the
    arguments of every loader: :mod:`~sparse_tutorial.data.registry`)."""
    files = corpus_source(NAME, given=directory)
    alignments = json.loads((files.path / FILES["alignments"]).read_text(encoding="utf-8"))
    with open(files.path / FILES["source"], encoding="utf-8", newline="") as source, \
            open(files.path / FILES["target"], encoding="utf-8", newline="") as target:
        verses, report = parse(alignments, source, target)
    return files.corpus(verses, report, key=lambda v: v.verse, seed=seed, verbose=verbose)
