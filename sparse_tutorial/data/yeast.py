"""The yeast multi-label data set (chapter 6: sparsemax for multi-label classification).

Source: PyPI · ``river==0.26.1`` wheel · ``river/datasets/yeast.csv.gz`` (BSD-3-Clause; the MULAN version
of Elisseeff & Weston's data, as on OpenML 40597): 2,417 genes, 103 real features (micro-array expression
and phylogenetic profiles), 14 functional classes, each gene in one or more classes. It is one of the
multi-label benchmarks of Martins & Astudillo (2016). The wheel is read as a zip; river is not installed.

Format: CSV with a header ``Att1..Att103,Class1..Class14``; features are floats, classes ``0``/``1``. A row
with another number of fields, a non-number feature, a class other than 0/1 or no class at all is
malformed (counted, reported). Examples are :class:`MultiLabelExample`; :func:`stack` turns a split into
tensors. Splits 80/10/10 by :func:`~sparse_tutorial.data.corpus.split_by_hash` on the row number.
"""
from __future__ import annotations

import csv
import gzip
import io
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from sparse_tutorial.data.cache import Provenance
from sparse_tutorial.data.corpus import Corpus, ParseReport, corpus_source
from sparse_tutorial.data.fetch import WHEEL_PYTHON, read_wheel, store

NAME = "yeast"
VERSION = "0.26.1"
REQUIREMENT = f"river=={VERSION}"
MEMBER = "river/datasets/yeast.csv.gz"
SOURCE = f"PyPI · {REQUIREMENT} (wheel) · {MEMBER}"
LICENSE = "BSD-3-Clause"
FILE = "yeast.csv.gz"
N_FEATURES, N_LABELS = 103, 14
# river's wheels are per platform; one fixed wheel is asked for so every machine hashes the same download.
WHEEL_ARGS = ("--platform", "manylinux_2_28_x86_64", "--implementation", "cp", *WHEEL_PYTHON)


@dataclass(frozen=True)
class MultiLabelExample:
    """``row``: 1-based data row in the file; ``features: (103,)`` float32; ``labels: (14,)`` bool."""

    row: int
    features: Tensor
    labels: Tensor


def parse(lines: Iterable[str]) -> tuple[list[MultiLabelExample], list[str], ParseReport]:
    """Examples, class names and parse report of yeast CSV ``lines`` (rules in the module docstring)."""
    report = ParseReport()
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None or len(header) != N_FEATURES + N_LABELS:
        raise ValueError(f"yeast: expected a header of {N_FEATURES + N_LABELS} columns, got {header!r:.80}")
    examples = []
    for row_number, fields in enumerate(reader, start=1):
        if not fields:
            continue
        report.records += 1
        try:
            if len(fields) != N_FEATURES + N_LABELS:
                raise ValueError
            features = [float(x) for x in fields[:N_FEATURES]]
            flags = fields[N_FEATURES:]
            if any(flag not in ("0", "1") for flag in flags) or "1" not in flags:
                raise ValueError
        except ValueError:
            report.bad(row_number + 1)
            continue
        examples.append(MultiLabelExample(row_number, torch.tensor(features, dtype=torch.float32),
                                          torch.tensor([flag == "1" for flag in flags])))
    report.kept = len(examples)
    return examples, header[N_FEATURES:], report


def stack(examples: Sequence[MultiLabelExample]) -> tuple[Tensor, Tensor]:
    """``(features, labels)``: ``features: (n, 103)`` float32, ``labels: (n, 14)`` bool."""
    if not examples:
        raise ValueError("examples is empty: nothing to stack")
    return torch.stack([e.features for e in examples]), torch.stack([e.labels for e in examples])


def fetch() -> Provenance:
    """``pip download --no-deps river==0.26.1`` (one fixed wheel) and keep ``yeast.csv.gz`` from the zip."""
    started = time.perf_counter()
    contents, wheel = read_wheel(REQUIREMENT, {FILE: MEMBER}, extra_args=WHEEL_ARGS)
    return store(NAME, contents, SOURCE, VERSION, LICENSE, started, notes={"wheel": wheel})


def load(seed: int = 0, path: str | Path | None = None, verbose: bool = True) -> Corpus[MultiLabelExample]:
    """The yeast examples, split 80/10/10 by ``seed``; ``labels`` = the 14 class names. ``path`` is a CSV, plain
    or ``.gz`` (the arguments of every loader: :mod:`~sparse_tutorial.data.registry`)."""
    source = corpus_source(NAME, FILE, path)
    raw = source.path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    examples, class_names, report = parse(io.StringIO(raw.decode("utf-8")))
    return source.corpus(examples, report, key=lambda e: str(e.row), seed=seed, verbose=verbose, labels=class_names)
