"""Evaluation subsets: a seeded, label-stratified random sample of a test split, never its first rows.

Several corpora are stored sorted by label (Rotten Tomatoes' test split starts with 97 % positive
sentences, 20 Newsgroups' hockey-vs-baseball test file with every baseball post), so "the first n test
examples" is close to one class. :func:`stratified_sample` draws the subset every evaluation of the library
uses (chapters 13 and 14): each label gets its share of the ``count`` places (largest remainders), its
members are drawn at random with ``seed``, and the indices are kept in their order in the split. The same
``(labels, count, seed)`` gives the same subset on every machine, so every system and seed of a comparison
is evaluated on the same examples. A subset whose label shares differ from the split's by more than
``tolerance`` (a count too small to represent every label) is refused with a message that names the split
and both sets of shares. :class:`Subset` also says what to store beside the results: its size, its label
shares, the split's, and a SHA-256 of its indices.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

SHARE_TOLERANCE = 0.02
"""The largest difference between a subset's label share and its split's that :func:`stratified_sample`
accepts (2 points)."""


class UnrepresentativeSubsetError(ValueError):
    """A subset's label shares differ from its split's by more than the tolerance."""


@dataclass(frozen=True)
class Subset:
    """Indices into a split and how the subset compares with it.

    Attributes:
        indices: positions in the split, increasing.
        label_shares: ``{label: share}`` in the subset; ``split_shares`` the same in the whole split.
        split: the split's name, for messages and records.
    """

    indices: tuple[int, ...]
    label_shares: dict[int, float]
    split_shares: dict[int, float]
    split: str

    @property
    def index_sha256(self) -> str:
        """SHA-256 of the indices (comma-separated decimal), to tell two subsets apart in stored results."""
        return hashlib.sha256(",".join(map(str, self.indices)).encode()).hexdigest()

    def record(self) -> dict[str, Any]:
        """What a results file stores about the subset."""
        return {"split": self.split, "size": len(self.indices), "label_shares": _named(self.label_shares),
                "split_shares": _named(self.split_shares), "index_sha256": self.index_sha256}


def _named(shares: dict[int, float]) -> dict[str, float]:
    return {str(label): round(share, 4) for label, share in sorted(shares.items())}


def _shares(labels: Sequence[int]) -> dict[int, float]:
    counts = Counter(int(label) for label in labels)
    return {label: count / len(labels) for label, count in sorted(counts.items())}


def stratified_sample(labels: Sequence[int], count: int, seed: int = 0, split: str = "test",
                      tolerance: float = SHARE_TOLERANCE) -> Subset:
    """A seeded, label-stratified random sample of ``count`` of the examples whose labels are ``labels``
    (the whole split when ``count`` is at least its size).

    Args:
        labels: ``(n,)`` the label of every example of the split, in the split's order.
        count: how many to draw.
        seed: the draw's random seed (the same for every arm of a comparison).
        split: the split's name, for the message of a refusal and for :meth:`Subset.record`.
        tolerance: the largest accepted difference of a label's share from the split's.

    Raises:
        ValueError: an empty split or ``count < 1``.
        UnrepresentativeSubsetError: some label's share is off by more than ``tolerance``.
    """
    labels = [int(label) for label in labels]
    if not labels or count < 1:
        raise ValueError(f"cannot draw {count} examples from the {len(labels)} of split {split!r}")
    split_shares = _shares(labels)
    if count >= len(labels):
        return Subset(tuple(range(len(labels))), split_shares, split_shares, split)
    exact = {label: share * count for label, share in split_shares.items()}
    quota = {label: int(value) for label, value in exact.items()}
    by_remainder = sorted(exact, key=lambda label: (-(exact[label] - quota[label]), label))
    for label in by_remainder[:count - sum(quota.values())]:
        quota[label] += 1
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for label in sorted(quota):
        members = [i for i, value in enumerate(labels) if value == label]
        chosen += [members[k] for k in rng.permutation(len(members))[:quota[label]]]
    subset = Subset(tuple(sorted(chosen)), _shares([labels[i] for i in chosen]), split_shares, split)
    worst = max(abs(subset.label_shares.get(label, 0.0) - share) for label, share in split_shares.items())
    if worst > tolerance:
        raise UnrepresentativeSubsetError(
            f"a subset of {count} of the {len(labels)} examples of split {split!r} has label shares "
            f"{_named(subset.label_shares)} against the split's {_named(split_shares)} (off by {worst:.3f}, "
            f"more than {tolerance}): draw more examples")
    return subset
