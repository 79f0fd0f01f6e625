"""Where fetched corpora live, what was fetched (provenance), and the error for a corpus not fetched yet.

The cache directory is ``$SPARSE_TUTORIAL_CACHE`` when set, else ``~/.cache/sparse_tutorial``; each corpus
has its own folder ``<cache>/<name>/`` holding the extracted data files and ``provenance.json``:

.. code-block:: json

    {"name": "ding", "source": "Debian apt · trans-de-en · /usr/share/trans/de-en",
     "version": "1.9-6", "license": "GPL-2+", "files": {"de-en": "<sha256>"}, "fetched": "2026-...Z",
     "fetch_seconds": 1.2, "notes": {}}

A corpus counts as fetched when its provenance file exists and is a readable record, every listed file is
present with the recorded SHA-256, and those are the pinned hashes (:mod:`sparse_tutorial.data.pins`: a
corpus fetched before the pins, from a registry that has since changed, is not loaded); anything else (a
corrupt ``provenance.json`` included) counts as not fetched, and fetching it again repairs it.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sparse_tutorial.atomic import atomic_write_text
from sparse_tutorial.data.pins import pin_mismatch

CACHE_ENV = "SPARSE_TUTORIAL_CACHE"
PROVENANCE_FILE = "provenance.json"


class CorpusNotFetchedError(FileNotFoundError):
    """A loader was asked for a corpus whose files are not (or not intact) in the cache."""


def cache_dir() -> Path:
    """The cache root: ``$SPARSE_TUTORIAL_CACHE`` if set, else ``~/.cache/sparse_tutorial``."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "sparse_tutorial"


def corpus_dir(name: str) -> Path:
    """The folder of corpus ``name`` inside :func:`cache_dir` (not created)."""
    return cache_dir() / name


def fetch_command(name: str) -> str:
    """The shell command that fetches corpus ``name``."""
    return f"python -m sparse_tutorial.data fetch {name}"


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class Provenance:
    """What was fetched for a corpus: source (registry · package · path), version, license, SHA-256 per file.

    ``files`` maps a file name inside the corpus folder to its SHA-256; ``notes`` holds corpus-specific
    facts (e.g. the release of the Debian archive an apt corpus was read from)."""

    name: str
    source: str
    version: str
    license: str
    files: dict[str, str]
    fetched: str = ""
    fetch_seconds: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        """One line for the reader: name, source, version, license and a short hash of every file."""
        hashes = ", ".join(f"{name} sha256:{digest[:12]}" for name, digest in sorted(self.files.items()))
        return f"[data] {self.name}: {self.source}, version {self.version}, license {self.license} ({hashes})"

    def save(self, directory: Path) -> None:
        """Write ``provenance.json`` into ``directory`` (all at once: :mod:`sparse_tutorial.atomic`)."""
        atomic_write_text(directory / PROVENANCE_FILE, json.dumps(asdict(self), indent=1, ensure_ascii=False) + "\n")

    @classmethod
    def read(cls, directory: Path) -> "Provenance":
        """Read ``provenance.json`` from ``directory``.

        Raises:
            ValueError: the file is not UTF-8 JSON, or not a provenance record.
        """
        record = json.loads((directory / PROVENANCE_FILE).read_text(encoding="utf-8"))
        if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
            raise ValueError("not a provenance record (it has no 'files' mapping)")
        try:
            return cls(**record)
        except TypeError as error:
            raise ValueError(f"not a provenance record ({error})") from error


def verify(name: str, check_hashes: bool = True) -> Provenance:
    """The provenance of corpus ``name`` after checking its files are all there (and, by default, unchanged
    since the fetch) and that they are the pinned bytes (:mod:`sparse_tutorial.data.pins`).

    Raises:
        CorpusNotFetchedError: naming the command that fetches the corpus.
    """
    directory = corpus_dir(name)
    command = fetch_command(name)
    if not (directory / PROVENANCE_FILE).is_file():
        raise CorpusNotFetchedError(f"corpus {name!r} is not in the cache {directory}; fetch it with: {command}")
    try:
        provenance = Provenance.read(directory)
    except ValueError as error:
        raise CorpusNotFetchedError(f"corpus {name!r}: {directory / PROVENANCE_FILE} is unreadable ({error}); "
                                    f"fetch it again with: {command}") from error
    for file_name, digest in provenance.files.items():
        path = directory / file_name
        if not path.is_file():
            raise CorpusNotFetchedError(f"corpus {name!r}: {path} is missing; fetch it again with: {command} --force")
        if check_hashes and sha256_file(path) != digest:
            raise CorpusNotFetchedError(f"corpus {name!r}: {path} does not match its recorded SHA-256; "
                                        f"fetch it again with: {command} --force")
    problem = pin_mismatch(name, provenance.files)
    if problem is not None:
        raise CorpusNotFetchedError(f"{problem} in the cache {directory} (fetched {provenance.fetched or 'earlier'}, "
                                    f"version {provenance.version}); fetch it again with: {command} --force")
    return provenance


def is_fetched(name: str) -> bool:
    """Whether corpus ``name`` is in the cache with every file intact."""
    try:
        verify(name)
    except CorpusNotFetchedError:
        return False
    return True
