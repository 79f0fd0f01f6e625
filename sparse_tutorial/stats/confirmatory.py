"""Confirmatory designs: the claims a run of fresh seeds will decide, with their test, margin, the effect each
is powered for and the seeds from a power calculation, fixed in code before the first fresh seed trains.

A 3-seed grid (the **pilot**) chooses; a design, committed before its runs, decides. This module holds the
tests every design uses; :mod:`~sparse_tutorial.stats.design` holds a design as data (its families, power
table and plan), and each experiment's design is its own module (``experiments/NAME/design.py``).

**The test.** A claim on arm A against arm B is judged on the per-seed paired differences
``d_s = A_s − B_s`` of its fresh seeds only, by the exact **Wilcoxon signed-rank test**
(:func:`scipy.stats.wilcoxon`, ``method="exact"``): no normality is assumed, so a seed whose attention
collapsed is one more rank, not a mixture that breaks a t-test. The correction is **Bonferroni** over the
family (level ``α / k`` for each of its ``k`` claims), chosen because it has an interval that agrees with its
verdicts exactly: the interval printed beside a verdict is the exact Hodges–Lehmann interval of the same
test, the set of shifts the test does not reject (:func:`signed_rank_interval`). For ``greater`` and
``less`` it is the two-sided interval at level ``1 − α/k`` and the verdict is ✓ or ✗ when it excludes 0
(by the side it lies on); for the margin kinds it is the interval whose ends are the one-sided ``1 − α/k``
bounds (two-sided level ``1 − 2α/k``), and the verdict is read off its position against the margin δ (the
rules of :mod:`~sparse_tutorial.stats.inference`, with this test). :func:`verdict_from_interval`
says it in code; nothing else decides.

**Power** (:func:`power`) is computed, not assumed: the exact test's rejection rule applied to simulated
fresh seeds, their differences drawn normal with the effect the claim is powered for and the pilot's
standard deviation. **Minimum detectable effect** (:func:`minimum_detectable_effect`): the smallest
effect the design detects with 80 % power, in the claim's unit; every "?" states it.

``python -m sparse_tutorial.stats.confirmatory NAME`` prints the design of experiment ``NAME``
(its ``experiments/NAME/design.py``).
"""
from __future__ import annotations

import importlib
import math
import sys
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

from sparse_tutorial.stats.inference import ALPHA, KINDS

POWER_TARGET = 0.8
"""The power every primary claim is designed for."""
POWER_SIMULATIONS = 20000
"""Simulated designs per power value (Monte-Carlo standard error at most 0.0035)."""


def signed_rank_null(n: int) -> np.ndarray:
    """The exact null distribution of the signed-rank statistic ``W+`` of ``n`` differences without ties or
    zeros: ``(n(n+1)/2 + 1,)`` probabilities of ``W+ = 0, 1, …`` (each sign of each rank equally likely)."""
    if n < 1:
        raise ValueError(f"the signed-rank test needs at least one difference, got {n}")
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return counts / 2.0 ** n


def _lower_critical(n: int, tail: float) -> int | None:
    """The largest ``c`` with ``P(W+ ≤ c) < tail`` under the null, ``None`` when even ``W+ = 0`` is not that
    rare (then no shift is rejected: the test cannot decide with ``n`` seeds)."""
    below = np.flatnonzero(np.cumsum(signed_rank_null(n)) < tail)
    return int(below[-1]) if len(below) else None


def walsh_averages(differences: Sequence[float]) -> np.ndarray:
    """The ``n(n+1)/2`` averages ``(d_i + d_j) / 2``, ``i ≤ j``, sorted; their median is the Hodges–Lehmann
    estimate, and ``W+`` of ``d − μ`` counts those above ``μ``."""
    d = np.asarray(differences, dtype=float)
    i, j = np.triu_indices(len(d))
    return np.sort((d[i] + d[j]) / 2.0)


def signed_rank_interval(differences: Sequence[float], tail: float) -> tuple[float, float]:
    """The exact interval of the shift μ that inverts the signed-rank test: ``(low, high)`` such that the
    one-sided test of ``H0: shift = μ`` at level ``tail`` rejects toward larger shifts exactly when
    ``μ < low`` and toward smaller shifts exactly when ``μ > high`` (``tail = α/2``: the two-sided level-α
    interval). Infinite ends when ``n`` seeds cannot reject at that level."""
    walsh = walsh_averages(differences)
    c = _lower_critical(len(differences), tail)
    if c is None:
        return -math.inf, math.inf
    return float(walsh[c]), float(walsh[len(walsh) - 1 - c])


def hodges_lehmann(differences: Sequence[float]) -> float:
    """The Hodges–Lehmann estimate of the shift: the median of the Walsh averages."""
    return float(np.median(walsh_averages(differences)))


def family_tail(kind: str, family_size: int, alpha: float = ALPHA) -> float:
    """The one-sided level of each end of a claim's interval in a Bonferroni family of ``family_size``:
    ``α / 2k`` for ``greater``/``less`` (a two-sided test at ``α/k``), ``α / k`` for the margin kinds."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if family_size < 1:
        raise ValueError(f"a family has at least one claim, got {family_size}")
    return alpha / family_size / (2 if kind in ("greater", "less") else 1)


def verdict_from_interval(kind: str, interval: tuple[float, float], margin: float | None = None) -> str:
    """✓ / ✗ / ? of a claim from its interval alone (the module docstring's rule)."""
    low, high = interval
    delta = margin or 0.0
    if kind in ("greater", "less"):
        if low > 0:
            return "✓" if kind == "greater" else "✗"
        if high < 0:
            return "✓" if kind == "less" else "✗"
        return "?"
    supported = {"not_greater": high < delta, "not_less": low > -delta, "equivalent": -delta < low and high < delta}
    contradicted = {"not_greater": low > delta, "not_less": high < -delta,
                    "equivalent": low > delta or high < -delta}
    return "✓" if supported[kind] else "✗" if contradicted[kind] else "?"


@dataclass(frozen=True)
class Judged:
    """A claim judged on fresh seeds: the verdict, the interval that made it and what it rests on."""

    verdict: str
    interval: tuple[float, float]
    level: float
    estimate: float
    mean: float
    differences: tuple[float, ...]
    p: float
    test: str


def judge(kind: str, differences: Sequence[float], family_size: int, margin: float | None = None,
          alpha: float = ALPHA) -> Judged:
    """Judge one claim of a Bonferroni family of ``family_size`` on the paired differences of its fresh seeds.

    ``p`` is scipy's exact signed-rank p of the test that the verdict's side needs (``greater``/``less``: two-
    sided against 0; a margin kind: the weaker of its one-sided tests against ±δ that would support it), for
    the tables; the verdict is :func:`verdict_from_interval` of the exact interval at the family's level.
    """
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or len(d) < 1 or not np.all(np.isfinite(d)):
        raise ValueError(f"differences must be a non-empty 1-D list of finite numbers, got {differences!r}")
    tail = family_tail(kind, family_size, alpha)
    interval = signed_rank_interval(d, tail)
    delta = margin or 0.0
    tests = {"greater": [(0.0, "two-sided")], "less": [(0.0, "two-sided")],
             "not_greater": [(delta, "less")], "not_less": [(-delta, "greater")],
             "equivalent": [(-delta, "greater"), (delta, "less")]}[kind]
    p = max(float(stats.wilcoxon(d - shift, alternative=alternative, method="exact").pvalue)
            for shift, alternative in tests)
    return Judged(verdict_from_interval(kind, interval, margin), interval, 1.0 - 2.0 * tail,
                  hodges_lehmann(d), float(d.mean()), tuple(d.tolist()), p,
                  f"exact Wilcoxon signed-rank test over {len(d)} fresh seeds, Bonferroni over {family_size} "
                  f"claims; Hodges–Lehmann interval at {100 * (1 - 2 * tail):.2f} %")


def power(kind: str, effect: float, sd: float, seeds: int, family_size: int, margin: float | None = None,
          alpha: float = ALPHA, simulations: int = POWER_SIMULATIONS, seed: int = 0) -> float:
    """The chance that :func:`judge` decides the claim (✓ or ✗, whichever ``effect`` implies) when the
    per-seed differences are normal with mean ``effect`` and standard deviation ``sd``."""
    if sd <= 0 or seeds < 1:
        raise ValueError(f"need sd > 0 and at least one seed, got sd={sd}, seeds={seeds}")
    tail = family_tail(kind, family_size, alpha)
    c = _lower_critical(seeds, tail)
    if c is None:
        return 0.0
    d = np.random.default_rng(seed).normal(effect, sd, size=(simulations, seeds))
    i, j = np.triu_indices(seeds)
    walsh = np.sort((d[:, i] + d[:, j]) / 2.0, axis=1)
    low, high = walsh[:, c], walsh[:, walsh.shape[1] - 1 - c]
    decided = [verdict_from_interval(kind, (lo, hi), margin) != "?" for lo, hi in zip(low, high)]
    return float(np.mean(decided))


def minimum_detectable_effect(kind: str, sd: float, seeds: int, family_size: int, margin: float | None = None,
                              alpha: float = ALPHA, target: float = POWER_TARGET) -> float:
    """The smallest effect :func:`judge` decides with ``target`` power, in the claim's unit: for ``greater``
    and ``less`` the true effect's distance from 0, for ``not_greater``/``not_less`` its distance beyond the
    margin on the side that supports the claim, for ``equivalent`` the smallest margin within which a true
    effect of 0 is shown (bisection on :func:`power`, the same simulated seeds at every step). ``inf`` when
    ``seeds`` seeds cannot decide at the family's level."""
    if _lower_critical(seeds, family_tail(kind, family_size, alpha)) is None:
        return math.inf
    delta = margin or 0.0

    def decided(distance: float) -> bool:
        if kind == "equivalent":
            return power(kind, 0.0, sd, seeds, family_size, distance, alpha) >= target
        effect = {"greater": distance, "less": distance, "not_greater": delta - distance,
                  "not_less": distance - delta}[kind]
        return power(kind, effect, sd, seeds, family_size, margin, alpha) >= target

    low, high = 0.0, sd
    while not decided(high):
        low, high = high, 2 * high
    for _ in range(20):
        middle = (low + high) / 2
        low, high = (low, middle) if decided(middle) else (middle, high)
    return high


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval of a binomial share, e.g. the share of seeds that collapse."""
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {successes}/{trials}")
    result = stats.binomtest(successes, trials).proportion_ci(confidence_level=level, method="exact")
    return float(result.low), float(result.high)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m sparse_tutorial.stats.confirmatory NAME (an experiment with a design: nmt, "
                 "summarization, classification, interpretability, explanation)")
    print(importlib.import_module(f"sparse_tutorial.experiments.{sys.argv[1]}.design").describe())
