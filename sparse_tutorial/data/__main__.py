"""Command line: ``python -m sparse_tutorial.data fetch [NAME...] [--force]``, ``... list``.

``fetch`` without names fetches every corpus the book needs (``make data`` runs it); ``list`` shows each
corpus and whether it is cached. The cache is ``$SPARSE_TUTORIAL_CACHE`` or ``~/.cache/sparse_tutorial``.
"""
from __future__ import annotations

import argparse
import sys
import time

from sparse_tutorial.data.cache import cache_dir, is_fetched
from sparse_tutorial.data.fetch import FetchError
from sparse_tutorial.data.registry import CORPORA, fetch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparse_tutorial.data",
                                     description="Fetch the book's corpora into the cache.")
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_parser = commands.add_parser("fetch", help="download and extract corpora (default: all)")
    fetch_parser.add_argument("names", nargs="*", metavar="NAME",
                              help=f"corpora to fetch, of {', '.join(sorted(CORPORA))} (default: all)")
    fetch_parser.add_argument("--force", action="store_true", help="fetch again even when cached")
    commands.add_parser("list", help="list the corpora and whether each is cached")
    args = parser.parse_args(argv)
    if args.command == "list":
        for name, module in CORPORA.items():
            state = "cached" if is_fetched(name) else "not fetched"
            print(f"{name:16s} {state:12s} {module.SOURCE}")
        print(f"cache: {cache_dir()}")
        return 0
    started = time.perf_counter()
    try:
        fetch(args.names, force=args.force)
    except (FetchError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"[data] done in {time.perf_counter() - started:.1f} s; cache: {cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
