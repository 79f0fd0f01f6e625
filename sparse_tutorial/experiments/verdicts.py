"""Verdicts on a paper's claims, and the tests that give them: one rule for every experiment of the book.

A claim is judged by a test that can come out either way:

* **✓** the run supports the claim: the difference has the claimed sign and its test gives p < 0.05;
* **✗** the run contradicts it: the opposite difference with p < 0.05;
* **?** the test cannot tell (p ≥ 0.05): the effect is smaller than the run resolves. Where the test
  gives a 95 % interval, its half-width is that resolution.

The tests: :func:`seed_test` (paired t-test over seeds), :func:`bootstrap_test` (paired bootstrap over test
items, seeds pooled), :func:`rank_test` (Mann–Whitney U, every seed required to agree) and
:func:`correlation_test` (a rank or linear correlation with a bootstrap interval). Each claim is stored as
:func:`claim`'s dict, ``{claim: {"verdict", "p", "difference", "test", "paper"[, "ci95"]}}``.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from scipy import stats

from sparse_tutorial.experiments.inference import VERDICTS

SIGNIFICANCE = 0.05
BOOTSTRAP_SAMPLES = 1000


def verdict(difference: float, p: float | None, claimed_sign: int = 1) -> str:
    """✓ / ✗ / ? for a ``difference`` whose claimed sign is ``claimed_sign`` (+1 or −1) at p-value ``p``."""
    if p is None or math.isnan(p) or p >= SIGNIFICANCE or difference == 0 or math.isnan(difference):
        return "?"
    return "✓" if difference * claimed_sign > 0 else "✗"


def no_better_verdict(difference: float, p: float | None) -> str:
    """The verdict on "X is no better than Y": ✗ only for a significant gain (``difference`` > 0)."""
    return "✗" if verdict(difference, p) == "✓" else "✓"


def claim(paper: str, difference: float, p: float | None, test: str, claimed_sign: int = 1,
          ci95: tuple[float, float] | None = None, verdict_override: str | None = None) -> dict[str, Any]:
    """One judged claim: ``{"verdict", "p", "difference", "test", "paper"}``, plus ``"ci95"`` (the 95 %
    interval of the difference) when the test gives one; ``verdict_override`` for the rules :func:`verdict`
    does not cover (e.g. :func:`no_better_verdict`)."""
    judged = {"verdict": verdict_override or verdict(difference, p, claimed_sign), "p": _finite(p),
              "difference": _finite(difference), "test": test, "paper": paper}
    if ci95 is not None:
        judged["ci95"] = [_finite(v) for v in ci95]
    return judged


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def seed_test(values: Sequence[float], others: Sequence[float]) -> tuple[float, float | None]:
    """(mean difference, paired t-test p over seeds); ``p`` is ``None`` with fewer than 2 seeds or when the
    per-seed differences do not vary."""
    n = min(len(values), len(others))
    if n == 0:
        raise ValueError("seed_test needs at least one seed of each")
    difference = sum(values[:n]) / n - sum(others[:n]) / n
    if n < 2 or len({a - b for a, b in zip(values[:n], others[:n])}) == 1:
        return difference, None  # one seed, or differences that do not vary: the t statistic is undefined
    return difference, float(stats.ttest_rel(values[:n], others[:n]).pvalue)


def bootstrap_test(scores: Sequence[Sequence[float]], others: Sequence[Sequence[float]],
                   n_samples: int = BOOTSTRAP_SAMPLES, seed: int = 12345
                   ) -> tuple[float, float, tuple[float, float]]:
    """Paired bootstrap over test items of a per-item score, seeds pooled.

    Args:
        scores: ``(seeds, items)``: the score of every test item (e.g. a document's ROUGE-L) per seed.
        others: the same for the system compared with; seed ``s`` is paired with seed ``s`` (the seeds both
            have are used).

    Returns:
        ``(difference, p, (low, high))``: the mean per-item difference over items and seeds, the two-sided
        p-value (the share of resamples of the centred difference at least as far from 0 as the observed
        one, ``(c + 1) / (n_samples + 1)``) and the 95 % percentile interval of the difference. The same
        item indices are drawn for every seed.
    """
    seeds = min(len(scores), len(others))
    a, b = np.asarray(scores[:seeds], dtype=float), np.asarray(others[:seeds], dtype=float)
    if a.ndim != 2 or a.shape != b.shape or a.shape[1] == 0:
        raise ValueError(f"scores and others must be (seeds, items) of the same shape, got {a.shape} and {b.shape}")
    per_item = (a - b).mean(axis=0)                                   # (items,)
    observed = float(per_item.mean())
    draws = np.random.default_rng(seed).integers(0, len(per_item), size=(n_samples, len(per_item)))
    resampled = per_item[draws].mean(axis=1)                          # (n_samples,)
    extreme = np.abs(resampled - observed) >= abs(observed)
    p = float((extreme.sum() + 1) / (n_samples + 1))
    low, high = np.percentile(resampled, [2.5, 97.5])
    return observed, p, (float(low), float(high))


def rank_test(samples: Sequence[Sequence[float]], others: Sequence[Sequence[float]], claimed_sign: int = 1
              ) -> tuple[float, float | None]:
    """Mann–Whitney U of ``samples`` against ``others``, once per seed, one-sided in the claimed direction;
    every seed must agree (an intersection–union test: its p is the largest seed's).

    Args:
        samples: per seed, the values of one group (e.g. the attention scores of positive tokens).
        others: per seed, the values of the group compared with (e.g. the neutral tokens).
        claimed_sign: +1 if the claim is that ``samples`` are larger, −1 if smaller.

    Returns:
        ``(difference, p)``: the mean over seeds of the difference of the groups' medians, and the largest
        one-sided p in the direction of that difference (``None`` when a group is empty), so a
        contradiction (every seed significant the other way) comes out ✗ under :func:`verdict`.
    """
    pairs = [(np.asarray(x, float), np.asarray(y, float)) for x, y in zip(samples, others) if len(x) and len(y)]
    if not pairs:
        return float("nan"), None
    difference = float(np.mean([np.median(x) - np.median(y) for x, y in pairs]))
    direction = "greater" if (difference >= 0 if claimed_sign > 0 else difference > 0) else "less"
    p = max(float(stats.mannwhitneyu(x, y, alternative=direction).pvalue) for x, y in pairs)
    return difference, p


def correlation_test(x: Sequence[float], y: Sequence[float], method: str = "kendall",
                     n_samples: int = BOOTSTRAP_SAMPLES, seed: int = 12345
                     ) -> tuple[float, float | None, tuple[float, float]]:
    """A correlation of paired values with its p-value and a bootstrap 95 % interval.

    Args:
        x, y: paired observations (e.g. the sparsegen λ of each run and its mean τ).
        method: ``"kendall"`` (τ-b), ``"spearman"`` or ``"pearson"``.

    Returns:
        ``(statistic, p, (low, high))``: NaN / ``None`` where the statistic is undefined (constant input);
        the interval is the 2.5th and 97.5th percentile over resamples of the pairs (resamples where the
        statistic is undefined are dropped).
    """
    functions = {"kendall": stats.kendalltau, "spearman": stats.spearmanr, "pearson": stats.pearsonr}
    if method not in functions:
        raise ValueError(f"method must be one of {list(functions)}, got {method!r}")
    a, b = np.asarray(x, float), np.asarray(y, float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 3:
        raise ValueError(f"x and y must be 1-D of the same length >= 3, got {a.shape} and {b.shape}")
    if np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("x and y must not contain NaN")

    def statistic(u: np.ndarray, v: np.ndarray) -> tuple[float, float]:
        if np.ptp(u) == 0 or np.ptp(v) == 0:
            return float("nan"), float("nan")
        result = functions[method](u, v)
        return float(result.statistic), float(result.pvalue)

    value, p = statistic(a, b)
    draws = np.random.default_rng(seed).integers(0, len(a), size=(n_samples, len(a)))
    resampled = np.array([statistic(a[d], b[d])[0] for d in draws])
    resampled = resampled[~np.isnan(resampled)]
    low, high = np.percentile(resampled, [2.5, 97.5]) if len(resampled) else (float("nan"), float("nan"))
    return value, (None if math.isnan(p) else p), (float(low), float(high))


VERDICT_ORDER = VERDICTS
"""The order in which a chapter lists its claims: contradictions of the paper first, "not tested" last."""


def ordered_claims(claims: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """``claims`` as ``(name, entry)`` pairs, contradictions first, then the unresolved, then the supported
    (each group in its stored order)."""
    return sorted(claims.items(), key=lambda item: VERDICT_ORDER.index(item[1]["verdict"]))


def claims_table(claims: dict[str, dict[str, Any]], digits: int = 3) -> list[dict[str, Any]]:
    """Rows for a chapter's claims table, in :func:`ordered_claims` order: ``{"claim", "verdict", "ours",
    "p", "paper", "test"}``, where ``ours`` is the difference with its 95 % interval when there is one
    (``"+0.412 [+0.1, +0.7]"``): the interval's width is what the run can resolve."""
    rows = []
    for name, entry in ordered_claims(claims):
        difference, interval = entry.get("effect", entry.get("difference")), entry.get("ci95")
        ours = "n/a" if difference is None else f"{difference:+.{digits}g}"
        if interval is not None and None not in interval:
            ours += f" [{interval[0]:+.2g}, {interval[1]:+.2g}]"
        row = {"claim": name, "verdict": entry["verdict"], "ours": ours,
               "p": None if entry["p"] is None else float(f"{entry['p']:.2g}"),
               "paper": entry["paper"], "test": entry.get("test") or entry.get("reason")}
        if "p_holm" in entry:  # a claim of the inference standard: its margin, Holm's p and the paper's effect
            row.update(p_holm=None if entry["p_holm"] is None else float(f"{entry['p_holm']:.2g}"),
                       margin="none" if entry["margin"] is None else f"±{entry['margin']:g}",
                       paper_effect=entry["paper_effect"])
        rows.append(row)
    return rows


def verdicts_in_brief(claims: dict[str, dict[str, Any]], most: int = 8) -> str:
    """One line per verdict, contradictions first: ``"✗ (2): claim; claim"``, for the top of a chapter.
    A verdict with more than ``most`` claims names the first ``most`` and counts the others."""
    lines = []
    for mark in VERDICT_ORDER:
        names = [name for name, entry in claims.items() if entry["verdict"] == mark]
        if mark == "not tested" and not names:
            continue
        shown = "; ".join(names[:most]) + (f"; and {len(names) - most} more" if len(names) > most else "")
        lines.append(f"{mark} ({len(names)}): " + (shown or "none"))
    return "\n".join(lines)


def described_claim(entry: dict[str, Any], scale: float = 1.0, spec: str = "+.2f", unit: str = "", label: str = "",
                    with_verdict: bool = True) -> str:
    """A judged claim's numbers for a sentence of a chapter, e.g. ``"✗ (τ-b = +0.68, 95 % interval [+0.50,
    +0.83], p = 6.6e-06)"``: ``label``, the difference times ``scale`` formatted by ``spec`` with ``unit``, its
    interval when there is one, and p. Without the verdict: ``"+1.5 points (95 % interval [...], p = 0.046)"``."""
    def number(value: float) -> str:
        return f"{scale * value:{spec}}"

    details = []
    if entry.get("ci95"):
        low, high = entry["ci95"]
        details.append(f"95 % interval [{number(low)}, {number(high)}]")
    details.append("p n/a" if entry["p"] is None else f"p = {entry['p']:.2g}"
                   + (f", {entry['p_holm']:.2g} after Holm" if entry.get("p_holm") is not None else ""))
    value = f"{label}{number(entry.get('effect', entry.get('difference')))}{unit}"
    return f"{entry['verdict']} ({value}, {', '.join(details)})" if with_verdict else f"{value} ({', '.join(details)})"
