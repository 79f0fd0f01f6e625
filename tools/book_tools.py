"""Execute the book's chapters in place, so their stored outputs are fresh before the book is built.

``make book`` runs ``python tools/book_tools.py execute``: every notebook listed in ``_toc.yml`` is executed
top to bottom in a fresh kernel (``nbclient``), in the ``quick`` profile and on the CPU unless told
otherwise, and written back with its outputs. A chapter that raises, runs past its timeout, kills its
kernel or cannot be written back stops the run with the chapter's name and the reason; that chapter's file
is unchanged (it is replaced all at once, never written in place), notebooks already executed keep their
new outputs.

This is build tooling of the repository, not part of the library: it needs ``nbclient`` and ``PyYAML``
(``requirements.txt``), which the library does not depend on.

Command line (from the repository root)::

    python tools/book_tools.py list                       # the chapters, in book order
    python tools/book_tools.py execute [PATH ...] [--timeout S] [--profile full] [--gpu]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import nbformat
import yaml
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
from tqdm.auto import tqdm

from sparse_tutorial.atomic import atomic_write_text
from sparse_tutorial.hardware import cpu_backend, describe_cpu_backend
from sparse_tutorial.profiles import PROFILES

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The repository root, where ``_toc.yml`` lies."""


def _toc_files(entries: Sequence[Mapping]) -> Iterator[str]:
    for entry in entries:
        if "file" in entry:
            yield entry["file"]
        for key in ("parts", "chapters", "sections"):
            yield from _toc_files(entry.get(key, []))


def toc_documents(root: Path = REPO_ROOT) -> list[Path]:
    """Every document of ``_toc.yml`` (the root first, then in book order), as existing paths.

    Raises:
        FileNotFoundError: if an entry of the table of contents has no ``.md`` or ``.ipynb`` file.
    """
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    documents = []
    for name in [toc["root"], *_toc_files(toc.get("parts", []) + toc.get("chapters", []))]:
        candidates = [root / f"{name}{suffix}" for suffix in ("", ".ipynb", ".md")]
        found = [path for path in candidates if path.is_file()]
        if not found:
            raise FileNotFoundError(f"_toc.yml lists {name!r} but no such .ipynb or .md file exists")
        documents.append(found[0])
    return documents


def toc_notebooks(root: Path = REPO_ROOT) -> list[Path]:
    """The chapters of ``_toc.yml`` that are notebooks, in book order."""
    return [path for path in toc_documents(root) if path.suffix == ".ipynb"]


@contextmanager
def _environment(overrides: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the kernels started inside the block, then restore them."""
    saved = {key: os.environ.get(key) for key in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def write_notebook(notebook: nbformat.NotebookNode, path: Path) -> None:
    """Replace ``path`` by ``notebook`` all at once: written to a temporary file in the same folder, then
    ``os.replace``-d onto it, so a full disk or an interrupted write leaves the previous file intact.

    Raises:
        OSError: the temporary file could not be written (it is removed; ``path`` is unchanged).
    """
    text = nbformat.writes(notebook)
    atomic_write_text(path, text if text.endswith("\n") else text + "\n")  # as nbformat.write ends a file


def execute_notebook(path: Path, timeout: int = 1800, kernel_name: str = "python3") -> float:
    """Execute one notebook in its own directory, store its new outputs in it and return the seconds it took.

    Args:
        path: the ``.ipynb`` file; it is replaced with the new outputs (:func:`write_notebook`) only when
            every cell succeeded.
        timeout: seconds the whole notebook may run (each cell gets what is left of it).
        kernel_name: the Jupyter kernel to start.

    Raises:
        CellExecutionError: a cell raised; the message names the cell and the error.
        CellTimeoutError: the notebook ran longer than ``timeout``.
        DeadKernelError: the kernel died (out of memory, a crash in native code).
        OSError: the notebook could not be written back; the file is unchanged.
    """
    notebook = nbformat.read(path, as_version=4)
    deadline = time.monotonic() + timeout
    client = NotebookClient(
        notebook,
        timeout_func=lambda cell: max(1, round(deadline - time.monotonic())),
        kernel_name=kernel_name,
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,  # per-cell timestamps would change every stored notebook at every run
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    write_notebook(notebook, path)
    return seconds


class ChapterError(RuntimeError):
    """A chapter raised, timed out, killed its kernel or could not be written back while the book was being
    executed."""


def execute_book(
    paths: Sequence[Path], timeout: int = 1800, profile_name: str = "quick", use_gpu: bool = False
) -> dict[Path, float]:
    """Execute ``paths`` one after the other with a progress bar; returns the seconds per notebook.

    The profile is passed to the kernels through ``SPARSE_TUTORIAL_PROFILE``; unless ``use_gpu``, CUDA is
    hidden from them so the stored outputs are the CPU's, as on every reader's laptop and in CI.

    Raises:
        ChapterError: a chapter failed; the ones before it keep their new outputs.
    """
    if profile_name not in PROFILES:
        raise ValueError(f"profile_name must be one of {PROFILES}, got {profile_name!r}")
    # TQDM_DISABLE: a progress bar is for a reader who runs a cell, not for the stored outputs of the book
    overrides = {"SPARSE_TUTORIAL_PROFILE": profile_name, "PYDEVD_DISABLE_FILE_VALIDATION": "1", "TQDM_DISABLE": "1"}
    if not use_gpu:
        overrides["CUDA_VISIBLE_DEVICES"] = ""
    seconds = {}
    with _environment(overrides), tqdm(paths, unit="notebook", file=sys.stderr) as progress:
        for path in progress:
            progress.set_postfix_str(path.name)
            try:
                seconds[path] = execute_notebook(path, timeout=timeout)
            except (CellExecutionError, CellTimeoutError, DeadKernelError, OSError) as error:
                raise ChapterError(f"{path} failed, its stored outputs are unchanged:\n"
                                   f"{type(error).__name__}: {error}") from error
            progress.write(f"{seconds[path]:7.1f} s  {path}")
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/book_tools.py", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="print the chapters of _toc.yml that are notebooks, in book order")
    execute = commands.add_parser("execute", help="execute chapters in place (default: every chapter)")
    execute.add_argument("paths", nargs="*", type=Path, help="notebooks to execute (default: all of _toc.yml)")
    execute.add_argument("--timeout", type=int, default=1800, help="seconds one notebook may run (default 1800)")
    execute.add_argument("--profile", choices=PROFILES, default="quick", help="run profile (default quick)")
    execute.add_argument("--gpu", action="store_true", help="let the kernels see the GPU (default: CPU only)")
    args = parser.parse_args(argv)

    if args.command == "list":
        print("\n".join(str(path.relative_to(REPO_ROOT)) for path in toc_notebooks()))
        return 0
    paths = [path.resolve() for path in args.paths] or toc_notebooks()
    # Trained numbers depend on the CPU back end (see the appendix "Reproducibility"); say which one ran.
    print(f"book_tools: executing on {describe_cpu_backend(cpu_backend())}", file=sys.stderr)
    try:
        seconds = execute_book(paths, timeout=args.timeout, profile_name=args.profile, use_gpu=args.gpu)
    except ChapterError as error:
        print(f"\nbook_tools: {error}", file=sys.stderr)
        return 1
    print(f"executed {len(seconds)} notebooks in {sum(seconds.values()):.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
