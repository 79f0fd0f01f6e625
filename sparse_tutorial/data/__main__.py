"""Command line: ``python -m sparse_tutorial.data fetch [NAME...] [--force]``, ``... check [NAME...]``, ``... list``.

``fetch`` without names fetches every corpus the book needs (``make data`` runs it); ``check`` fetches them
into a new, empty cache that it then removes, so that what a fresh machine gets today is compared with the
pins (:mod:`sparse_tutorial.data.pins`) whatever is cached here (``make test`` runs it); ``list`` shows each
corpus and whether it is cached, and why not when its folder is there but broken. The cache is
``$SPARSE_TUTORIAL_CACHE`` or ``~/.cache/sparse_tutorial``. Corpus names and the cache folder are checked
before anything is downloaded; a failure ends with one line saying what went wrong (exit status 2).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from sparse_tutorial.data.cache import CACHE_ENV, CorpusNotFetchedError, cache_dir, corpus_dir, verify
from sparse_tutorial.data.fetch import FetchError
from sparse_tutorial.data.registry import CORPORA, fetch


def _list() -> None:
    for name, module in CORPORA.items():
        try:
            verify(name)
            state, problem = "cached", None
        except CorpusNotFetchedError as error:
            state, problem = "not fetched", error if corpus_dir(name).exists() else None
        print(f"{name:16s} {state:12s} {module.SOURCE}")
        if problem is not None:
            print(f"{'':16s} ({problem})")
    print(f"cache: {cache_dir()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparse_tutorial.data",
                                     description="Fetch the book's corpora into the cache.")
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_parser = commands.add_parser("fetch", help="download and extract corpora (default: all)")
    fetch_parser.add_argument("names", nargs="*", metavar="NAME",
                              help=f"corpora to fetch, of {', '.join(sorted(CORPORA))} (default: all)")
    fetch_parser.add_argument("--force", action="store_true", help="fetch again even when cached")
    check_parser = commands.add_parser("check", help="fetch corpora into an empty cache and compare them with "
                                                     "their pins (default: all); the cache is left alone")
    check_parser.add_argument("names", nargs="*", metavar="NAME", help="corpora to check (default: all)")
    commands.add_parser("list", help="list the corpora and whether each is cached")
    args = parser.parse_args(argv)
    if args.command == "list":
        _list()
        return 0
    unknown = [name for name in args.names if name not in CORPORA]
    if unknown:
        (fetch_parser if args.command == "fetch" else check_parser).error(f"unknown corpus {', '.join(map(repr, unknown))}; "
                           f"known corpora: {', '.join(sorted(CORPORA))}")
    started = time.perf_counter()
    try:
        if args.command == "check":
            with tempfile.TemporaryDirectory(prefix="sparse_tutorial-check-") as empty:
                os.environ[CACHE_ENV] = empty
                fetch(args.names)
            print(f"[data] every corpus fetched into an empty cache is its pinned bytes "
                  f"({time.perf_counter() - started:.1f} s)")
            return 0
        fetch(args.names, force=args.force)
    except (FetchError, OSError) as error:
        print(f"{parser.prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2  # argparse's exit status for a command that cannot run as asked
    print(f"[data] done in {time.perf_counter() - started:.1f} s; cache: {cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
