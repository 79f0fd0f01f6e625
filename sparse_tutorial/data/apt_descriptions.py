"""Package descriptions -> one-line synopses, a real summarization corpus from apt (chapter 11).

Source: the ``Translation-en`` index of Debian 12 "bookworm" main at point release 12.15, read through the
fixed archive of :mod:`sparse_tutorial.data.debian` whatever the machine's own apt sources (Debian or
Ubuntu), so every machine builds the same ``descriptions.jsonl``, checked against its pinned SHA-256
(:mod:`sparse_tutorial.data.pins`). Each description is the package maintainer's text under the package's
own license (DFSG-free for Debian main); nothing of it is committed to this repository.

Every stanza of the index is ``Package:``, ``Description-md5:`` and ``Description-en:`` whose first line is
the synopsis and whose continuation lines (one leading space; ``" ."`` = paragraph break) are the long
description. The fetch step keeps one record per ``(package, Description-md5)``, sorted, as
``descriptions.jsonl``; the provenance records the SHA-256 of the index and the ``Release`` fields
(``Origin/Suite/Codename/Version/Date``) of the archive.

Summarization pairs (:class:`SummaryPair`): ``document`` is the long description with paragraphs joined
by a space and whitespace squeezed, ``summary`` the synopsis. Dropped, and counted as filtered: a
document under :data:`MIN_DOCUMENT_WORDS` words, a synopsis under 2 words, and a second package with the
same (document, summary) as one already kept. A stanza without ``Package`` or ``Description-en`` is
malformed (counted, reported). Splits 80/10/10 by :func:`~sparse_tutorial.data.corpus.split_by_hash`
on the *document*, so packages sharing a description (``foo``, ``foo-data``, ...) fall in the same split.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sparse_tutorial.data.cache import Provenance
from sparse_tutorial.data.corpus import Corpus, ParseReport, corpus_source
from sparse_tutorial.data.debian import NAME as ARCHIVE, POINT_RELEASE, DebianArchive
from sparse_tutorial.data.fetch import store

NAME = "apt_descriptions"
SOURCE = f"Debian apt · {ARCHIVE} · Translation-en · Description-en fields"
LICENSE = "per package (each description is part of its package; Debian main is DFSG-free)"
FILE = "descriptions.jsonl"
MIN_DOCUMENT_WORDS = 10


@dataclass(frozen=True)
class SummaryPair:
    """``package``: the package name; ``document``: its long description; ``summary``: its synopsis."""

    package: str
    document: str
    summary: str


def stanzas(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """``(first line number, fields)`` per stanza of a deb822 index; continuation lines are appended to
    their field with a newline, as in the file (without the leading space). A line that is neither a field
    nor a continuation is kept under the key ``"_malformed"``."""
    fields: dict[str, str] = {}
    start = 0
    current = None
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            if fields:
                yield start, fields
            fields, current = {}, None
            continue
        if not fields:
            start = number
        if line[0] in " \t" and current is not None:
            fields[current] += "\n" + line[1:]
        elif ":" in line and line[0] not in " \t":
            current, value = line.split(":", 1)
            fields[current] = value.strip()
        else:
            fields["_malformed"] = line  # a line that is neither a field nor a continuation
    if fields:
        yield start, fields


def long_description(text: str) -> str:
    """The long description of a ``Description-en`` value (after its synopsis line), as one paragraph."""
    paragraphs = [line for line in text.split("\n")[1:] if line.strip() != "."]
    return re.sub(r"\s+", " ", " ".join(paragraphs)).strip()


def parse(records: Iterable[dict[str, str]]) -> tuple[list[SummaryPair], ParseReport]:
    """Summary pairs of records ``{"package", "md5", "description"}`` (rules in the module docstring)."""
    report = ParseReport()
    pairs, seen = [], set()
    for number, record in enumerate(records, start=1):
        report.records += 1
        package, description = record.get("package"), record.get("description")
        if not package or not description:
            report.bad(number)
            continue
        summary = re.sub(r"\s+", " ", description.split("\n")[0]).strip()
        document = long_description(description)
        if len(document.split()) < MIN_DOCUMENT_WORDS:
            report.filtered[f"description under {MIN_DOCUMENT_WORDS} words"] += 1
            continue
        if len(summary.split()) < 2:
            report.filtered["synopsis under 2 words"] += 1
            continue
        if (document, summary) in seen:
            report.filtered["same description and synopsis as another package"] += 1
            continue
        seen.add((document, summary))
        pairs.append(SummaryPair(package, document, summary))
    report.kept = len(pairs)
    return pairs, report


def fetch() -> Provenance:
    """Read the ``Translation-en`` index of the fixed Debian archive and store its records, sorted."""
    started = time.perf_counter()
    with DebianArchive() as archive:
        text = archive.translation_index()
        release = archive.release
    records: dict[tuple[str, str], dict[str, str]] = {}
    for _, fields in stanzas(text.splitlines()):
        description = "" if "_malformed" in fields else fields.get("Description-en", "")
        record = {"package": fields.get("Package", ""), "md5": fields.get("Description-md5", ""),
                  "description": description}
        records.setdefault((record["package"], record["md5"]), record)
    content = "".join(json.dumps(records[key], ensure_ascii=False, sort_keys=True) + "\n" for key in sorted(records))
    return store(NAME, {FILE: content.encode("utf-8")}, SOURCE, POINT_RELEASE, LICENSE, started,
                 notes={"index_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "records": len(records),
                        "release": {key: release.get(key, "") for key in ("Origin", "Suite", "Codename", "Version",
                                                                           "Date")}})


def load(seed: int = 0, path: str | Path | None = None, verbose: bool = True) -> Corpus[SummaryPair]:
    """The (description, synopsis) pairs, split 80/10/10 by ``seed``; ``path`` is a ``descriptions.jsonl`` (the
    arguments of every loader: :mod:`~sparse_tutorial.data.registry`)."""
    source = corpus_source(NAME, FILE, path)
    records = []
    with open(source.path, encoding="utf-8") as handle:
        for line in handle:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                records.append({})  # counted as malformed by parse(), at this line number
    pairs, report = parse(records)
    corpus = source.corpus(pairs, report, key=lambda p: p.document, seed=seed, verbose=verbose)
    return corpus
