"""One fixed Debian archive for the corpora that come from apt (chapters 9 and 11), whatever the machine's own.

The apt corpora are read from **Debian 12 "bookworm", main, at point release 12.15** (11 July 2026), never
from the repositories the machine happens to be configured with: those differ between Debian and Ubuntu
(Colab) and change every few days (``bookworm-security``, ``-updates``), which gave every new machine another
corpus. The suite itself changes only at a point release, and bookworm's regular support ended in June 2026.

:class:`DebianArchive` runs ``apt-get`` with a private configuration (``APT_CONFIG``) that ignores the
system's: ``Dir::Etc::Parts`` and ``Dir::Etc::Main`` point at an empty folder, so nothing under
``/etc/apt`` is read; the one source is ``MIRROR`` ``bookworm main``; lists and caches live in a
temporary folder, so the system's apt state is left alone and no root is needed. apt checks every
downloaded index against the hashes of the signed ``Release`` file; the signature is checked with Debian's
archive key where the machine has it (``KEYRING``; Debian does, Ubuntu need not), and in every case the
corpus built from the index is checked against its pinned SHA-256 (:mod:`sparse_tutorial.data.pins`),
which is what makes it the same bytes on every machine. Opening the archive also checks that it is still
at ``POINT_RELEASE``: a later point release is an error that says how to move the corpora to it.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import TracebackType

from sparse_tutorial.data.fetch import FetchError, run_client

MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
COMPONENT = "main"
POINT_RELEASE = "12.15"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
APT_HELPER = "/usr/lib/apt/apt-helper"
NAME = f"Debian {SUITE} {COMPONENT} {POINT_RELEASE}"
"""How provenance lines name the archive."""


def release_fields(text: str) -> dict[str, str]:
    """The header fields (``Origin``, ``Suite``, ``Version``, ``Date``, ...) of a ``Release``/``InRelease`` text."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if key in ("MD5Sum", "SHA256"):  # the lists of index files follow the header
            break
        if colon and not key.startswith((" ", "-")) and key not in fields:
            fields[key] = value.strip()
    return fields


class DebianArchive:
    """``with DebianArchive() as archive:`` -- the fixed archive's indexes fetched into a private folder.

    ``archive.translation_index()`` is the text of its English descriptions (``Translation-en``);
    ``archive.download(package, version, directory)`` the ``.deb`` of one package version.

    Raises:
        FetchError: apt is missing, ``apt-get update`` fails, or the archive has moved past
            ``POINT_RELEASE``.
    """

    def __init__(self) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.release: dict[str, str] = {}

    @property
    def folder(self) -> Path:
        if self._tmp is None:
            raise RuntimeError("DebianArchive is used outside its `with` block")
        return Path(self._tmp.name)

    def _configure(self) -> None:
        """Write the private sources list and ``apt.conf`` (see the module docstring)."""
        folder = self.folder
        (folder / "lists" / "partial").mkdir(parents=True)
        (folder / "empty").mkdir()
        trust = f"signed-by={KEYRING}" if KEYRING.is_file() else "trusted=yes"
        (folder / "sources.list").write_text(f"deb [{trust}] {MIRROR} {SUITE} {COMPONENT}\n", encoding="utf-8")
        settings = {
            "Dir::Etc::Parts": folder / "empty", "Dir::Etc::Main": folder / "empty" / "apt.conf",
            "Dir::Etc::SourceList": folder / "sources.list", "Dir::Etc::SourceParts": folder / "empty",
            "Dir::State::Lists": folder / "lists", "Dir::Cache::pkgcache": folder / "pkgcache.bin",
            "Dir::Cache::srcpkgcache": folder / "srcpkgcache.bin", "Acquire::Languages": "en",
            "Debug::NoLocking": "true" if hasattr(os, "geteuid") and os.geteuid() != 0 else "false",
        }
        (folder / "apt.conf").write_text("".join(f'{key} "{value}";\n' for key, value in settings.items()),
                                         encoding="utf-8")

    def apt(self, *arguments: str, cwd: Path | None = None) -> str:
        """Run an apt command (``"apt-get", "update"``, ...) under the private configuration; its stdout."""
        environment = {**os.environ, "APT_CONFIG": str(self.folder / "apt.conf")}
        return run_client(list(arguments), cwd=cwd, env=environment)

    def __enter__(self) -> "DebianArchive":
        if not Path(APT_HELPER).exists():
            raise FetchError(f"the apt corpora need apt (apt-get and {APT_HELPER}), found on Debian and Ubuntu; "
                             "this machine has no apt, so they cannot be fetched here")
        self._tmp = tempfile.TemporaryDirectory(prefix="sparse_tutorial-apt-")
        try:
            self._configure()
            self.apt("apt-get", "update", "-qq")
            in_release = next(self.folder.joinpath("lists").glob("*_InRelease"), None)
            if in_release is None:
                raise FetchError(f"apt-get update fetched no InRelease of {MIRROR} {SUITE}")
            self.release = release_fields(in_release.read_text(encoding="utf-8", errors="replace"))
            if self.release.get("Version") != POINT_RELEASE:
                raise FetchError(
                    f"{MIRROR} {SUITE} is now at point release {self.release.get('Version')!r} "
                    f"({self.release.get('Date')}), the apt corpora are pinned to {POINT_RELEASE}: their stored "
                    "runs were made on it. To move them on purpose, follow 'Bumping a corpus' in the data appendix (book/appendix/data.md).")
        except BaseException:
            self._tmp.cleanup()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def translation_index(self) -> str:
        """The text of the archive's ``Translation-en`` (decompressed by ``apt-helper cat-file``)."""
        indexes = sorted(self.folder.joinpath("lists").glob("*_i18n_Translation-en*"))
        if len(indexes) != 1:
            raise FetchError(f"apt-get update left {len(indexes)} Translation-en indexes of {MIRROR} {SUITE} "
                             f"{COMPONENT}, expected 1: {[p.name for p in indexes]}")
        return self.apt(APT_HELPER, "cat-file", str(indexes[0]))

    def download(self, package: str, version: str, directory: Path) -> Path:
        """``apt-get download PACKAGE=VERSION`` into ``directory``; the ``.deb`` file."""
        self.apt("apt-get", "download", f"{package}={version}", cwd=directory)
        debs = sorted(directory.glob(f"{package}_*.deb"))
        if len(debs) != 1:
            raise FetchError(f"apt-get download {package}={version} left {len(debs)} .deb files in {directory}, "
                             "expected 1")
        return debs[0]
