"""Trained models of the book, loaded in one line.

    >>> from sparse_tutorial import pretrained
    >>> translator = pretrained.load("nmt", "+Sparsemax")          # Table I's +Sparsemax, medium, seed 0
    >>> result = translator.translate("Im Anfang schuf Gott die Himmel und die Erde.")
    >>> result.text, result.attention.shape                         # (output pieces + 1, source pieces)

:data:`SHIPPED` lists the models (:func:`available`): the translation systems of chapter 10 that its tables
and figures show, and chapter 11's pointer-generator with coverage, each trained from scratch with seed 0
at the medium size exactly as its stored run (``book/results/runs/``) was trained, so the loaded NMT
translates the test verses as its run record says (``tests/test_pretrained.py``).

Each model is one `safetensors <https://huggingface.co/docs/safetensors>`_ file: the weights (float16, cast
to float32 on loading; chapter 10 measures what that changes), and in the file's metadata its config -- the
experiment, the system, the model's constructor arguments, the vocabulary, and where it came from (the run,
the commit). Loading never unpickles anything. The SHA-256 of every file is part of this package
(``shipped.json``), and :func:`load` refuses a file whose bytes differ, naming it.

The files are package data (``sparse_tutorial/pretrained/weights/``, 16 MB): every install, from a clone or
a wheel, has the weights of its own version, and loading needs no network. :func:`load` reads them there,
or the file given as ``path`` (a copy kept elsewhere); either way the SHA-256 is checked first.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from sparse_tutorial.pretrained.models import Summarizer, Translator, from_file

__all__ = ["SHIPPED", "WEIGHTS_FOLDER", "PretrainedError", "Shipped", "Summarizer", "Translator", "available",
           "load", "locate", "sha256"]

WEIGHTS_FOLDER = Path(__file__).resolve().with_name("weights")
"""Where the shipped files are: package data, installed with the library."""


class PretrainedError(RuntimeError):
    """A shipped model cannot be loaded: unknown name, file missing and not downloadable, or corrupted."""


@dataclass(frozen=True)
class Shipped:
    """One shipped model: its file name in :data:`WEIGHTS_FOLDER`, the file's SHA-256 and size in bytes."""

    experiment: str
    system: str
    file: str
    sha256: str
    bytes: int


def _read_manifest() -> dict[tuple[str, str], Shipped]:
    entries = json.loads((Path(__file__).with_name("shipped.json")).read_text(encoding="utf-8"))
    return {(entry["experiment"], entry["system"]): Shipped(**entry) for entry in entries}


SHIPPED: dict[tuple[str, str], Shipped] = _read_manifest()
"""``(experiment, system) ->`` :class:`Shipped`, from ``shipped.json`` (written by ``tools/export_pretrained.py``)."""


def available() -> list[tuple[str, str]]:
    """The ``(experiment, system)`` pairs :func:`load` knows, e.g. ``("nmt", "+Sparsemax")``."""
    return list(SHIPPED)


def sha256(path: str | Path) -> str:
    """The SHA-256 of the file at ``path`` (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _entry(experiment: str, system: str) -> Shipped:
    try:
        return SHIPPED[(experiment, system)]
    except KeyError:
        known = ", ".join(f"({e!r}, {s!r})" for e, s in SHIPPED)
        raise PretrainedError(f"no shipped model ({experiment!r}, {system!r}); the shipped ones are: {known}") from None


def locate(experiment: str, system: str) -> Path:
    """The verified file of shipped model ``(experiment, system)`` in :data:`WEIGHTS_FOLDER`.

    Raises:
        PretrainedError: unknown model; the file is missing from the installation; or its SHA-256 is not the
            shipped one.
    """
    entry = _entry(experiment, system)
    path = WEIGHTS_FOLDER / entry.file
    if not path.is_file():
        raise PretrainedError(f"{entry.file} is missing from {WEIGHTS_FOLDER} (an installation without the "
                              f"package's data files): reinstall sparse_tutorial, or pass path= a copy of the "
                              f"file (SHA-256 {entry.sha256})")
    return _verified(path, entry)


def _verified(path: Path, entry: Shipped) -> Path:
    found = sha256(path)
    if found != entry.sha256:
        raise PretrainedError(f"{path} is corrupted or not the shipped {entry.file}: its SHA-256 is {found}, the "
                              f"shipped file's is {entry.sha256}; reinstall sparse_tutorial, or pass path= an "
                              f"intact copy")
    return path


def load(experiment: str, system: str, path: str | Path | None = None,
         device: str = "cpu") -> Translator | Summarizer:
    """Shipped model ``system`` of ``experiment`` (:func:`available`), ready to use on ``device``:
    a :class:`Translator` for ``"nmt"``, a :class:`Summarizer` for ``"summarization"``.

    Args:
        experiment, system: e.g. ``"nmt", "+Sparsemax"`` (the names of the results files' tables).
        path: read this file instead of looking for it (its SHA-256 is still checked against the shipped one).
        device: where the model's weights go, e.g. ``"cuda"``.

    Raises:
        PretrainedError: see :func:`locate`.
    """
    entry = _entry(experiment, system)
    file = _verified(Path(path), entry) if path is not None else locate(experiment, system)
    return from_file(file, device)
