"""Package descriptions -> one-line synopses, a real summarization corpus from apt (chapter 10).

Source: the ``Translation-en`` index of the machine's apt repositories (Debian or Ubuntu), fetched with

.. code-block:: bash

    apt-get update -o Acquire::Languages=en -o Dir::State::Lists=<tmp>/lists ...
    /usr/lib/apt/apt-helper cat-file <tmp>/lists/*_i18n_Translation-en*

The private lists folder leaves the system's own apt state alone (Debian's container images set
``Acquire::Languages "none"``, so the system lists hold no descriptions). Each description is the
package maintainer's text under the package's own license (DFSG-free for Debian main); nothing of it is
committed to this repository.

Every stanza of the index is ``Package:``, ``Description-md5:`` and ``Description-en:`` whose first line is
the synopsis and whose continuation lines (one leading space; ``" ."`` = paragraph break) are the long
description. Indexes change over time (security updates, point releases), so the fetch step pins what it
can: stanzas of all suites are merged, deduplicated by ``(package, Description-md5)``, sorted, written as
``descriptions.jsonl``, and the provenance records the SHA-256 of that file and, per index, the file name,
its SHA-256 and the ``Origin/Suite/Version/Date`` of its ``InRelease``.

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
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sparse_tutorial.data.cache import Provenance
from sparse_tutorial.data.corpus import Corpus, ParseReport, corpus_source
from sparse_tutorial.data.fetch import FetchError, run_client, store

NAME = "apt_descriptions"
SOURCE = "apt · Translation-en index of the configured repositories · Description-en fields"
LICENSE = "per package (each description is part of its package; Debian main is DFSG-free)"
FILE = "descriptions.jsonl"
APT_HELPER = "/usr/lib/apt/apt-helper"
MIN_DOCUMENT_WORDS = 10
INDEX_NAME = re.compile(r"_i18n_Translation-en(\.(lz4|gz|xz|bz2|zst))?$")
"""Index files in the lists folder: compressed (Debian images) or plain (Ubuntu's default)."""


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


def _release_info(in_release: Path) -> dict[str, str]:
    """``Origin``, ``Suite``, ``Codename``, ``Version``, ``Date`` of an ``InRelease`` file."""
    wanted = ("Origin", "Suite", "Codename", "Version", "Date")
    info = {}
    for line in in_release.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition(":")
        if key in ("MD5Sum", "SHA256"):  # the file lists follow the header fields
            break
        if key in wanted and key not in info:
            info[key] = value.strip()
    return info


def fetch() -> Provenance:
    """Download the ``Translation-en`` indexes into a private lists folder and store the merged records."""
    if shutil.which("apt-get") is None or not Path(APT_HELPER).exists():
        raise FetchError(f"{NAME} needs apt (apt-get and {APT_HELPER}), found on Debian and Ubuntu only; "
                         "this machine has no apt, so the summarization corpus cannot be fetched here")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        lists = Path(tmp) / "lists"
        (lists / "partial").mkdir(parents=True)
        options = ["-o", "Acquire::Languages=en", "-o", f"Dir::State::Lists={lists}",
                   "-o", f"Dir::Cache::pkgcache={tmp}/pkgcache.bin", "-o", f"Dir::Cache::srcpkgcache={tmp}/src.bin"]
        if hasattr(os, "geteuid") and os.geteuid() != 0:
            options += ["-o", "Debug::NoLocking=true"]
        run_client(["apt-get", "update", "-qq"] + options)
        indexes = sorted(p for p in lists.iterdir() if INDEX_NAME.search(p.name))
        if not indexes:
            raise FetchError(f"apt-get update fetched no Translation-en index into {lists}: the repositories "
                             "configured on this machine publish no English descriptions")
        records: dict[tuple[str, str], dict[str, str]] = {}
        used = []
        for index in indexes:
            text = run_client([APT_HELPER, "cat-file", str(index)])
            n_stanzas = 0
            for _, fields in stanzas(text.splitlines()):
                n_stanzas += 1
                description = "" if "_malformed" in fields else fields.get("Description-en", "")
                record = {"package": fields.get("Package", ""), "md5": fields.get("Description-md5", ""),
                          "description": description}
                records.setdefault((record["package"], record["md5"]), record)
            base = index.name.split("_i18n_")[0].rsplit("_", 1)[0]  # drop the component (main, ...)
            releases = [lists / f"{base}_{kind}" for kind in ("InRelease", "Release")]
            release = next((path for path in releases if path.exists()), None)
            used.append({"index": index.name, "stanzas": n_stanzas,
                         "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                         "release": _release_info(release) if release else {}})
    content = "".join(json.dumps(records[key], ensure_ascii=False, sort_keys=True) + "\n" for key in sorted(records))
    version = "; ".join(sorted({f"{u['release'].get('Origin', '?')} {u['release'].get('Suite', '?')} "
                                f"{u['release'].get('Version', '')}".strip() for u in used}))
    return store(NAME, {FILE: content.encode("utf-8")}, SOURCE, version, LICENSE, started,
                 notes={"indexes": used, "records": len(records)})


def load(seed: int = 0, path: str | Path | None = None, verbose: bool = True) -> Corpus[SummaryPair]:
    """The (description, synopsis) pairs, split 80/10/10 by ``seed``; ``path`` is a ``descriptions.jsonl``, and
    ``verbose`` also prints the indexes used (the arguments of every loader: :mod:`~sparse_tutorial.data.registry`)."""
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
    if verbose and corpus.provenance:
        print(f"[data] {NAME}: indexes " + ", ".join(
            f"{u['index']} ({u['release'].get('Date', 'no date')})" for u in corpus.provenance.notes["indexes"]))
    return corpus
