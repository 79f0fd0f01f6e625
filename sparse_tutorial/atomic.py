"""Writing files so that a crash, a full disk or a second writer never leaves a broken one.

Every file the library writes -- results JSON, training checkpoints, cached corpora, vocabularies -- goes
through :func:`atomic_path`: the new content is written to a temporary file in the target's folder, flushed
to disk, and only then moved onto the target with ``os.replace``. Within one folder (hence one file
system) ``os.replace`` is atomic on POSIX and Windows, so a reader sees either the previous file or the
whole new one:

* a write that fails half-way (``ENOSPC``, an exception) leaves the previous file as it was and removes the
  temporary file; a process killed mid-write leaves at most a ``.NAME.*.tmp`` file beside it;
* two concurrent writers each fill their own temporary file; the last ``os.replace`` wins, complete.

:func:`writable_directory` checks a destination *before* a long computation, so that a bad output path
fails in a second rather than after the work.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NEW_FILE_MODE = 0o644
"""Permissions of a newly created file (a replaced file keeps its own); ``mkstemp`` alone would give 0o600."""


class UnwritableDirectoryError(OSError):
    """A destination folder cannot be created or written; the message names the folder and the reason."""


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDWR)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX only: Windows cannot open a folder)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends without error, move it onto ``path``.

    Write the new content to the yielded path by any means (``torch.save(state, tmp)``, ``tmp.write_text``);
    if the block raises, ``path`` is left untouched and the temporary file is removed. The folder of
    ``path`` must exist.
    """
    target = Path(path)
    descriptor, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(descriptor)
    temporary = Path(name)
    try:
        os.chmod(temporary, target.stat().st_mode if target.exists() else NEW_FILE_MODE)
        yield temporary
        _fsync(temporary)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _fsync_directory(target.parent)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Replace the file at ``path`` by ``data`` all at once (see :func:`atomic_path`); returns ``path``."""
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)
    return Path(path)


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Replace the file at ``path`` by ``text`` all at once (no newline translation); returns ``path``."""
    return atomic_write_bytes(path, text.encode(encoding))


def writable_directory(path: str | Path, purpose: str) -> Path:
    """Create folder ``path`` if needed and check that a file can be written in it; return it.

    Args:
        path: the folder.
        purpose: what the folder is for, e.g. ``"--out"``, ``"the results"`` (the error names it).

    Raises:
        UnwritableDirectoryError: ``path`` is a file, or cannot be created, or is read-only.
    """
    directory = Path(path).expanduser()
    if directory.exists() and not directory.is_dir():
        raise UnwritableDirectoryError(f"{purpose}: {directory} is a file, not a folder")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        raise UnwritableDirectoryError(f"{purpose}: cannot write in {directory} "
                                       f"({error.strerror or error})") from error
    return directory
