"""German-English sentence pairs from the Ding dictionary (Debian ``trans-de-en``), chapter 9's exercise.

Source: Debian apt · ``trans-de-en`` 1.9-6 of the fixed archive of :mod:`sparse_tutorial.data.debian`
(Debian 12.15, whatever the machine's own apt sources) · ``/usr/share/trans/de-en`` (Ding by Frank Richter,
TU Chemnitz; GPL-2+). Each line of the file is ``german :: english``; both sides list the same number of entries
separated by `` | `` (a headword, its inflections, then usage examples), and each entry may list synonyms
separated by ``; ``. Lines starting with ``#`` are comments.

Kept as sentence pairs (the rule, applied to every aligned entry pair):

1. take the first synonym of each side (text before the first ``"; "``);
2. clean it: drop ``{...}`` (grammar), ``[...]`` (register/region) and ``(...)`` (notes) annotations and
   ``/ABBR/`` abbreviation markers, resolve glued word alternatives ``a/b`` to the first word, squeeze
   spaces;
3. keep the pair if both sides end in ``.``, ``!`` or ``?`` and have at least 4 words;
4. drop a sentence pair with spaced alternatives ``... / ...`` left on either side (their scope, a word
   or a phrase, cannot be told from the text), and keep only the first pair of each German sentence
   (both counted as filtered).

A line without exactly one `` :: `` or with different numbers of ``|``-entries on the two sides is
malformed (counted, reported). Examples are :class:`TranslationPair` with ``source`` German and a single
reference in ``targets``; splits 80/10/10 by :func:`~sparse_tutorial.data.corpus.split_by_hash` on the
German sentence.
"""
from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sparse_tutorial.data.cache import Provenance
from sparse_tutorial.data.corpus import Corpus, ParseReport, corpus_source
from sparse_tutorial.data.debian import NAME as ARCHIVE, DebianArchive
from sparse_tutorial.data.fetch import deb_extract, store

NAME = "ding"
PACKAGE = "trans-de-en"
VERSION = "1.9-6"
PATH_IN_PACKAGE = "usr/share/trans/de-en"
SOURCE = f"Debian apt · {ARCHIVE} · {PACKAGE} {VERSION} · /{PATH_IN_PACKAGE}"
LICENSE = "GPL-2+"
FILE = "de-en"

_ANNOTATION = re.compile(r"\s*(\{[^}]*\}|\[[^\]]*\]|\([^)]*\))")
_ABBREVIATION = re.compile(r"\s/[^/\s]+/(?=\s|$)")
_GLUED_ALTERNATIVES = re.compile(r"(\w+)(?:/\w+)+")
_SENTENCE_END = re.compile(r"[.!?]$")
MIN_WORDS = 4


@dataclass(frozen=True)
class TranslationPair:
    """One source sentence and its reference translations (``targets[0]`` is the main one)."""

    source: str
    targets: tuple[str, ...]

    @property
    def target(self) -> str:
        """The first reference."""
        return self.targets[0]


def clean_entry(entry: str) -> str:
    """Apply steps 1-2 of the module docstring to one ``|``-entry of one side."""
    text = entry.split("; ")[0]
    text = _ABBREVIATION.sub("", text)
    text = _ANNOTATION.sub("", text)
    text = _GLUED_ALTERNATIVES.sub(r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def is_sentence(text: str) -> bool:
    """Step 3: ends in ``.``/``!``/``?`` and has at least :data:`MIN_WORDS` words."""
    return bool(_SENTENCE_END.search(text)) and len(text.split()) >= MIN_WORDS


def parse(lines: Iterable[str]) -> tuple[list[TranslationPair], ParseReport]:
    """Sentence pairs of Ding dictionary ``lines`` (rules in the module docstring) and the parse report."""
    report = ParseReport()
    pairs: list[TranslationPair] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip() or line.startswith("#"):
            continue
        report.records += 1
        sides = line.split(" :: ")
        if len(sides) != 2:
            report.bad(number)
            continue
        german, english = sides[0].split(" | "), sides[1].split(" | ")
        if len(german) != len(english):
            report.bad(number)
            continue
        for de, en in zip(german, english):
            de, en = clean_entry(de), clean_entry(en)
            if not (is_sentence(de) and is_sentence(en)):
                continue
            if " / " in de or " / " in en:
                report.filtered["spaced / alternatives"] += 1
                continue
            if de in seen:
                report.filtered["repeated German sentence"] += 1
                continue
            seen.add(de)
            pairs.append(TranslationPair(de, (en,)))
    report.kept = len(pairs)
    return pairs, report


def fetch() -> Provenance:
    """``apt-get download trans-de-en=1.9-6`` from the fixed Debian archive, unpack it and keep ``de-en``."""
    started = time.perf_counter()
    with DebianArchive() as archive, tempfile.TemporaryDirectory() as tmp:
        deb = archive.download(PACKAGE, VERSION, Path(tmp))
        unpacked = deb_extract(deb, Path(tmp) / "root")
        content = (unpacked / PATH_IN_PACKAGE).read_bytes()
    return store(NAME, {FILE: content}, SOURCE, VERSION, LICENSE, started,
                 notes={"deb": deb.name, "pairs_rule": "see sparse_tutorial.data.ding"})


def load(seed: int = 0, path: str | Path | None = None, verbose: bool = True) -> Corpus[TranslationPair]:
    """The Ding sentence pairs, split 80/10/10 by ``seed`` (the arguments of every loader:
    :mod:`~sparse_tutorial.data.registry`)."""
    source = corpus_source(NAME, FILE, path)
    with open(source.path, encoding="utf-8") as handle:
        pairs, report = parse(handle)
    return source.corpus(pairs, report, key=lambda p: p.source, seed=seed, verbose=verbose)
