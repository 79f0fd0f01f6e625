"""The inference standard of the book's verdicts: seeds as the unit, an interval for every claim, margins
fixed before the run, Holm's correction, and "not tested" where a claim cannot be judged.

A **claim** (:class:`Claim`) is fixed before the run: what the paper says, its effect where it gives one,
and the claim's kind with, for the kinds that need one, its **margin** δ (in the measure's unit):

=================  =========================  ==========================  ==================================
kind               the paper says             ✓ when                      ✗ when
=================  =========================  ==========================  ==================================
``greater``        A beats B                  effect > 0 and p_holm < α   effect < 0 and p_holm < α
``less``           A is below B               effect < 0 and p_holm < α   effect > 0 and p_holm < α
``equivalent``     A is on par with B         p_holm < α (TOST, ±δ)       p_against_corrected < α (effect
                                                                          beyond ±δ, two-sided)
``not_greater``    A is no better than B      p_holm < α (effect < δ)     p_against_corrected < α (effect > δ)
``not_less``       A does not hurt            p_holm < α (effect > −δ)    p_against_corrected < α (effect < −δ)
=================  =========================  ==========================  ==================================

and **?** otherwise. A contradiction is judged as firmly as a support: for a margin kind, ✗ needs its own
test, that the difference lies beyond the margin on the side the claim rules out (:func:`p_against`, seeds
and items as for ``p``), corrected for the family's tested claims (Bonferroni, which Holm's step-down never
undercuts: ``p_against_corrected``). **not tested** is computed before any test, when a precondition fails: an arm has
fewer than :data:`MIN_SEEDS` trained seeds, the intervention did not measurably act (its mechanism measure
did not move beyond its interval), the measure sits at a bound, or the test set is below its stated size.

**Evidence** (:class:`Evidence`) for a difference between two arms comes from :func:`compare`, which
respects both sources of variance, training and test items. Seed ``s`` of one arm is paired with seed ``s``
of the other (the same initialisation seed, batch order and, where the design has one, base model), and
the seeds both arms have are used:

* a **hierarchical bootstrap**: resample the seeds, then the test items (the same seeds and items for both
  arms), recompute the measure; its percentile interval is the claim's ``ci95``;
* a **seed-level test**: the measure once per trained seed, a paired t-test over the seeds (with 3 seeds
  an arm, it alone is what "seeds are the unit" asks; its interval is stored beside the bootstrap's).

A claim's ``p`` is the larger of the two (it must hold across seeds *and* across seeds and items). Every
measure is a ratio of sums over items (:data:`Score`): a mean per item, attention entropy per token (entropy
summed over a verse's tokens / tokens), AER (hits / links), or corpus BLEU (n-gram counts,
:func:`bleu_statistics`), so a resample only re-weights items. :func:`judge_family` applies Holm's
step-down correction to a chapter's family of claims, stores raw and adjusted p, and gives each verdict.

**The interval beside a verdict** is ``ci_holm``, the set of differences the claim's own test does not reject
at the level Holm's step-down applied to it (:func:`holm_levels`; both parts of the test inverted, the
paired t's interval and the bootstrap's, and joined), so it agrees with the verdict by construction:

* ``greater``/``less``: two-sided at the claim's level; ✓ or ✗ exactly when it excludes 0;
* ``not_less`` (``not_greater`` mirrored): its lower bound is the one-sided bound of the support test at
  the claim's level, its upper bound that of the contradiction test at Bonferroni's α/m; ✓ exactly when the
  lower bound lies above −δ, ✗ exactly when the upper bound lies below −δ;
* ``equivalent``: both bounds one-sided at the claim's level (TOST); ✓ exactly when it lies inside ±δ.

The bootstrap's percentile ``ci95`` (unadjusted) stays as a description of the spread over seeds and items.
**Every tested claim stores** ``mde``: the smallest distance from its null (0 or the margin) that its paired
t over the run's seeds detects with 80 % power at the claim's level, from the per-seed differences' spread:
what a "?" could have seen.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from scipy import stats
from scipy.optimize import brentq

ALPHA = 0.05
"""The significance level of every test, after Holm's correction."""
MIN_SEEDS = 3
"""Trained seeds an arm needs for its claims to be tested."""
ACCURACY_MARGIN = 0.01
"""One accuracy point: δ of every "on par", "no better" and "does not hurt" claim on accuracy (chapters 12
and 14), fixed before their runs."""
BOOTSTRAP_SAMPLES = 20000
"""Resamples of the hierarchical bootstrap: enough that the smallest p it can give, 1/20,001, times the
largest family of the book (59 claims) stays below α/10, so that the number of resamples does not decide a
verdict (2,000 made chapter 12's ✓ depend on it: 59/2,001 = 0.0295)."""
POWER = 0.8
"""The power at which a claim's minimum detectable effect (``mde``) is computed."""
VERDICTS = ("✗", "?", "✓", "not tested")
"""Every verdict, in the order a chapter lists them (contradictions of the paper first)."""
KINDS = ("greater", "less", "equivalent", "not_greater", "not_less")
"""The kinds of claim (see the module docstring)."""

Score = Callable[[np.ndarray], np.ndarray]
"""``score(summed) -> values``: the measure from statistics summed over items, ``(..., K) -> (...)``."""


@dataclass(frozen=True)
class Claim:
    """A paper's claim as the book judges it, fixed before the run.

    Attributes:
        paper: what the paper says and where (``"Table I: +0.69 BLEU, significant"``).
        kind: one of :data:`KINDS` (see the module docstring).
        margin: δ, in the measure's unit; required for ``equivalent``, ``not_greater`` and ``not_less``.
        paper_effect: the paper's own difference in the same unit, when it gives one.
        unit: the measure and its unit, for tables (``"BLEU"``, ``"nats/token"``).
    """

    paper: str
    kind: str = "greater"
    margin: float | None = None
    paper_effect: float | None = None
    unit: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        needs_margin = self.kind in ("equivalent", "not_greater", "not_less")
        if needs_margin and not (self.margin is not None and self.margin > 0):
            raise ValueError(f"a {self.kind!r} claim needs a margin > 0 fixed before the run, got {self.margin}")


class Comparison(NamedTuple):
    """A claim on arm ``a`` against arm ``b`` in one ``measure`` (a chapter's own name for it)."""

    claim: Claim
    a: str
    b: str
    measure: str


@dataclass(frozen=True)
class Evidence:
    """What the run says about a claim's difference (arm A − arm B).

    Attributes:
        effect: the difference of the arms' means over seeds.
        ci95: the 95 % interval of ``effect`` (hierarchical bootstrap).
        samples: the bootstrap distribution of ``effect`` (not stored in results).
        seeds: seeds of arm A and arm B.
        seed_level: the per-seed values of each arm and the paired t's interval (stored beside).
        test: a sentence naming the test.
    """

    effect: float
    ci95: tuple[float, float]
    samples: np.ndarray = field(repr=False)
    seeds: tuple[int, int]
    seed_level: dict[str, Any]
    test: str


@dataclass(frozen=True)
class NotTested:
    """A claim whose precondition failed: ``reason`` says which, ``details`` what was measured."""

    reason: str
    details: dict[str, Any] = field(default_factory=dict)


def mean_score(summed: np.ndarray) -> np.ndarray:
    """The mean per item from statistics ``(value_sum, count)``: use with items stacked as ``(value, 1)``."""
    return summed[..., 0] / summed[..., 1]


def ratio_score(summed: np.ndarray) -> np.ndarray:
    """``sum_0 / sum_1``: entropy per token from ``(entropy, tokens)``, a share from ``(hits, total)``."""
    return summed[..., 0] / np.maximum(summed[..., 1], 1e-12)


def aer_score(summed: np.ndarray) -> np.ndarray:
    """AER from per-verse ``(sure_hits, possible_hits, links, sure)``: ``1 − (sure_hits + possible_hits) / (links + sure)``."""
    return 1.0 - (summed[..., 0] + summed[..., 1]) / np.maximum(summed[..., 2] + summed[..., 3], 1e-12)


def bleu_statistics(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """Per sentence, the 10 statistics sacrebleu sums for corpus BLEU (hypothesis and reference length, then
    matches and totals of 1- to 4-grams), lower-cased and 13a-tokenized as :func:`~sparse_tutorial.metrics.corpus_bleu`:
    ``(sentences, 10)``. :func:`bleu_score` of their sum is the corpus BLEU."""
    from sacrebleu.metrics import BLEU

    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(max(map(len, references)))]
    return np.asarray(BLEU(lowercase=True)._extract_corpus_statistics(list(hypotheses), streams), dtype=float)


def bleu_score(summed: np.ndarray) -> np.ndarray:
    """Corpus BLEU (sacrebleu's defaults: 4-grams, ``exp`` smoothing, brevity penalty) from summed
    :func:`bleu_statistics` ``(..., 10)``."""
    hyp_len, ref_len = summed[..., 0], summed[..., 1]
    matches, totals = summed[..., 2:6], summed[..., 6:10]
    smooth = np.cumprod(np.where(matches == 0, 2.0, 1.0), axis=-1)  # 'exp': 1/2^k for the k-th zero count
    precisions = np.where(matches > 0, matches / np.maximum(totals, 1), 1.0 / (smooth * np.maximum(totals, 1)))
    precisions = np.where(totals > 0, precisions, 0.0)
    log_mean = np.log(np.maximum(precisions, 1e-300)).mean(axis=-1)
    penalty = np.where(hyp_len < ref_len, np.exp(1.0 - ref_len / np.maximum(hyp_len, 1e-12)), 1.0)
    return np.where(hyp_len > 0, 100.0 * penalty * np.exp(log_mean), 0.0)


def compare(a: np.ndarray, b: np.ndarray, score: Score = mean_score, n_samples: int = BOOTSTRAP_SAMPLES,
            seed: int = 12345, what: str = "") -> Evidence:
    """Evidence on arm A − arm B from per-item statistics of every trained seed.

    Args:
        a, b: ``(seeds, items, K)``: the statistics of each test item per seed (the same items, in the same
            order, for both arms; seed ``s`` of ``a`` paired with seed ``s`` of ``b``, the seeds both have
            used); ``score`` turns statistics summed over items into the measure.
        score: e.g. :func:`mean_score`, :func:`ratio_score`, :func:`aer_score`, :func:`bleu_score`.
        n_samples, seed: bootstrap resamples and their random seed.
        what: the measure's name for the test sentence.

    Returns:
        :class:`Evidence`: the mean over the paired seeds of the per-seed difference, the hierarchical
        bootstrap's interval and distribution, and the seed-level paired t-test.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim != 3 or b.ndim != 3 or a.shape[1:] != b.shape[1:] or a.shape[1] == 0:
        raise ValueError(f"a and b must be (seeds, items, K) with the same items and K, got {a.shape} and {b.shape}")
    seeds = min(len(a), len(b))
    per_seed_a, per_seed_b = score(a[:seeds].sum(axis=1)), score(b[:seeds].sum(axis=1))      # (seeds,)
    effect = float((per_seed_a - per_seed_b).mean())
    rng = np.random.default_rng(seed)
    items = a.shape[1]
    weights = np.stack([np.bincount(rng.integers(0, items, items), minlength=items) for _ in range(n_samples)])
    picks = rng.integers(0, seeds, size=(n_samples, seeds))
    differences = (score(np.einsum("snk,bn->bsk", a[:seeds], weights))
                   - score(np.einsum("snk,bn->bsk", b[:seeds], weights)))                      # (n_samples, seeds)
    samples = np.take_along_axis(differences, picks, axis=1).mean(axis=1)
    low, high = np.percentile(samples, [2.5, 97.5])
    return Evidence(effect, (float(low), float(high)), samples, (len(a), len(b)),
                    paired_t(per_seed_a.tolist(), per_seed_b.tolist()),
                    f"{what + ': ' if what else ''}hierarchical bootstrap (seeds, then test items, both paired "
                    f"across arms) and a paired t-test over {seeds} seeds")


def compare_groups(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], n_samples: int = BOOTSTRAP_SAMPLES,
                   seed: int = 12345, what: str = "") -> Evidence:
    """Evidence on mean(A) − mean(B) where the arms are two groups of items of the same trained model (the
    polarity scores of positive tokens against those of neutral ones, say), not the same items twice.

    Args:
        a, b: per seed, the values of the arm's items (seed ``s`` of both from the same trained model; the
            seeds both have are used).
        n_samples, seed, what: as for :func:`compare`.

    Returns:
        :class:`Evidence`: the mean over seeds of the per-seed difference of group means; the hierarchical
        bootstrap resamples the seeds, then each group's items independently; the seed-level test is the
        paired t over the per-seed group means.
    """
    seeds = min(len(a), len(b))
    groups = [(np.asarray(x, dtype=float), np.asarray(y, dtype=float)) for x, y in zip(a[:seeds], b[:seeds])]
    if not groups or any(x.ndim != 1 or y.ndim != 1 or not len(x) or not len(y) for x, y in groups):
        raise ValueError("a and b must give each seed a non-empty list of values")
    per_seed_a, per_seed_b = [float(x.mean()) for x, _ in groups], [float(y.mean()) for _, y in groups]
    rng = np.random.default_rng(seed)
    differences = np.stack([_resampled_means(x, rng, n_samples) - _resampled_means(y, rng, n_samples)
                            for x, y in groups], axis=1)                                       # (n_samples, seeds)
    samples = np.take_along_axis(differences, rng.integers(0, seeds, size=(n_samples, seeds)), axis=1).mean(axis=1)
    low, high = np.percentile(samples, [2.5, 97.5])
    return Evidence(float(np.mean(per_seed_a) - np.mean(per_seed_b)), (float(low), float(high)), samples,
                    (len(a), len(b)), paired_t(per_seed_a, per_seed_b),
                    f"{what + ': ' if what else ''}hierarchical bootstrap (seeds, then each group's items) and a "
                    f"paired t-test over {seeds} seeds")


def trend(x: Sequence[float], runs: np.ndarray, score: Score = mean_score, n_samples: int = BOOTSTRAP_SAMPLES,
          seed: int = 12345, what: str = "") -> Evidence:
    """Evidence on the trend of a measure along a design variable ``x`` (sparsegen's λ, say): per trained
    seed, Kendall's τ-b between ``x`` and the measure of the runs at each ``x``; the effect is their mean.

    Args:
        x: ``(points,)`` the design variable, without ties.
        runs: ``(seeds, points, items, K)``: per seed and point, the statistics of each test item (the same
            items everywhere); ``score`` turns statistics summed over items into the measure.
        n_samples, seed, what: as for :func:`compare`.

    Returns:
        :class:`Evidence` whose ``effect`` is the mean τ-b over seeds; the hierarchical bootstrap resamples
        the seeds, then the test items (the same for every point); the seed-level test is a one-sample t
        of the per-seed τ-b against 0 (``seed_level["b"]`` holds the zeros).
    """
    x, runs = np.asarray(x, dtype=float), np.asarray(runs, dtype=float)
    if runs.ndim != 4 or runs.shape[1] != len(x) or len(x) < 3 or runs.shape[2] == 0:
        raise ValueError(f"runs must be (seeds, points, items, K) with {len(x)} >= 3 points, got {runs.shape}")
    if len(np.unique(x)) != len(x):
        raise ValueError(f"x must not have ties, got {x.tolist()}")
    seeds, items = runs.shape[0], runs.shape[2]
    per_seed = kendall_tau_b(x, score(runs.sum(axis=2)))                                      # (seeds,)
    rng = np.random.default_rng(seed)
    weights = np.stack([np.bincount(rng.integers(0, items, items), minlength=items) for _ in range(n_samples)])
    taus = kendall_tau_b(x, score(np.einsum("spnk,bn->bspk", runs, weights)))                  # (n_samples, seeds)
    samples = np.take_along_axis(taus, rng.integers(0, seeds, size=(n_samples, seeds)), axis=1).mean(axis=1)
    low, high = np.percentile(samples, [2.5, 97.5])
    return Evidence(float(np.mean(per_seed)), (float(low), float(high)), samples, (seeds, seeds),
                    paired_t(per_seed.tolist(), [0.0] * seeds),
                    f"{what + ': ' if what else ''}Kendall τ-b with the design variable per seed; hierarchical "
                    f"bootstrap (seeds, then test items) and a t-test of the {seeds} seeds' τ-b against 0")


def kendall_tau_b(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Kendall's τ-b between ``x: (points,)`` (no ties) and each row of ``values: (..., points)``; NaN for a
    row that is constant."""
    dx = np.sign(x[None, :] - x[:, None])                                                     # (points, points)
    dv = np.sign(values[..., None, :] - values[..., :, None])                                 # (..., points, points)
    upper = np.triu(np.ones_like(dx, dtype=bool), k=1)
    concordance = (dx * dv)[..., upper].sum(axis=-1)
    pairs = upper.sum()
    untied = (dv[..., upper] != 0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(untied > 0, concordance / np.sqrt(pairs * untied), np.nan)


def _resampled_means(values: np.ndarray, rng: np.random.Generator, n_samples: int) -> np.ndarray:
    """``(n_samples,)`` means of bootstrap resamples of ``values``."""
    counts = rng.multinomial(len(values), np.full(len(values), 1.0 / len(values)), size=n_samples)
    return counts @ values / len(values)


def paired_t(values: Sequence[float], others: Sequence[float]) -> dict[str, Any]:
    """The paired t-test over seeds: ``{"a", "b", "difference", "ci95", "df", "se"}`` (interval ``None``
    with fewer than 2 seeds or per-seed differences that do not vary)."""
    x, y = np.asarray(values, float), np.asarray(others, float)
    d = x - y
    out: dict[str, Any] = {"a": x.tolist(), "b": y.tolist(), "difference": float(d.mean()),
                           "ci95": None, "df": None, "se": None}
    if len(d) < 2 or d.std(ddof=1) == 0:
        return out
    se, df = float(d.std(ddof=1) / math.sqrt(len(d))), len(d) - 1
    half = float(stats.t.ppf(0.975, df)) * se
    return {**out, "ci95": [out["difference"] - half, out["difference"] + half], "df": float(df), "se": se}


def seed_interval(values: Sequence[float]) -> list[float] | None:
    """The 95 % t-interval of the mean of ``values``, one per trained seed (``None`` with fewer than 2 seeds
    or values that do not vary): a row of a results table with its seeds' uncertainty."""
    return paired_t(values, np.zeros(len(values)))["ci95"]


def _seed_t(seed_level: dict[str, Any], shift: float) -> float:
    """The paired t over seeds of H0 ``difference = shift``."""
    return (seed_level["difference"] - shift) / seed_level["se"]


def _seed_p(seed_level: dict[str, Any], shift: float, alternative: str) -> float | None:
    """p of the paired t for H0 ``difference = shift`` (two-sided) or one-sided (``"greater"``/``"less"``)."""
    if seed_level["se"] is None:
        return None
    t = _seed_t(seed_level, shift)
    df = seed_level["df"]
    if alternative == "two-sided":
        return float(2 * stats.t.sf(abs(t), df))
    return float(stats.t.sf(t, df) if alternative == "greater" else stats.t.cdf(t, df))


def _bootstrap_p(samples: np.ndarray, effect: float, shift: float, alternative: str) -> float:
    """The bootstrap's p for H0 ``effect = shift``: two-sided from the centred distribution, one-sided as
    the share of resamples on the far side of ``shift``."""
    n = len(samples)
    if alternative == "two-sided":
        return float((np.sum(np.abs(samples - effect) >= abs(effect - shift)) + 1) / (n + 1))
    beyond = samples <= shift if alternative == "greater" else samples >= shift
    return float((np.sum(beyond) + 1) / (n + 1))


def _claim_tests(kind: str, margin: float | None) -> list[tuple[float, str]]:
    """The ``(shift, alternative)`` tests whose p a claim of ``kind`` takes: two-sided against 0 for
    ``greater`` and ``less``, one-sided against ±δ for the margin kinds (``equivalent``: both, TOST)."""
    margin = margin or 0.0
    return {"greater": [(0.0, "two-sided")], "less": [(0.0, "two-sided")],
            "not_greater": [(margin, "less")], "not_less": [(-margin, "greater")],
            "equivalent": [(-margin, "greater"), (margin, "less")]}[kind]


def p_value(claim: Claim, evidence: Evidence) -> float:
    """The claim's p: the larger of the bootstrap's and the seed-level test's (the paired t's is ``None``,
    and then ignored, only when the per-seed differences do not vary); for the margin kinds the p of their
    one-sided tests against ±δ (``equivalent``: the larger of both, TOST)."""
    tests = _claim_tests(claim.kind, claim.margin)
    return max(_larger_p(evidence, shift, alternative) for shift, alternative in tests)


def seed_test(kind: str, margin: float | None, seed_level: dict[str, Any]) -> tuple[float, float] | None:
    """A judged claim's paired t-test over seeds alone, from its stored fields: ``(t, p)`` of the test that
    gives :func:`p_value` its seeds' part (``equivalent``: the weaker of its two one-sided tests), ``t``
    being the difference minus the test's shift (0 or ±δ) over its standard error. ``None`` when the
    per-seed differences do not vary."""
    if seed_level.get("se") is None:
        return None
    tests = [(_seed_t(seed_level, shift), _seed_p(seed_level, shift, alternative))
             for shift, alternative in _claim_tests(kind, margin)]
    return max(tests, key=lambda test: test[1])


def t_needed(p: float, seeds: int, kind: str) -> float:
    """The absolute t a paired t-test over ``seeds`` seeds must reach for its p to fall to ``p``, tested as
    :func:`p_value` tests a claim of ``kind`` (two-sided for ``greater`` and ``less``, else one-sided).
    Holm's first step over 17 claims (``p = 0.05 / 17``) asks three seeds for 18.4 two-sided, 13.0 one-sided."""
    if seeds < 2:
        raise ValueError(f"a paired t-test needs at least 2 seeds, got {seeds}")
    return float(stats.t.isf(p / (2 if kind in ("greater", "less") else 1), seeds - 1))


def _larger_p(evidence: Evidence, shift: float, alternative: str) -> float:
    """The larger of the bootstrap's p and the seed-level test's (when the per-seed differences vary)."""
    seed_p = _seed_p(evidence.seed_level, shift, alternative)
    bootstrap_p = _bootstrap_p(evidence.samples, evidence.effect, shift, alternative)
    return bootstrap_p if seed_p is None else max(bootstrap_p, seed_p)


def p_against(claim: Claim, evidence: Evidence) -> float | None:
    """For a margin kind, the p of what contradicts the claim: the difference beyond the margin on the side
    the claim rules out (``equivalent``: either side, two-sided); the larger of the bootstrap's and the
    seed-level test's, as in :func:`p_value`. ``None`` for ``greater`` and ``less``, whose ✗ is their own
    two-sided test."""
    if claim.kind in ("greater", "less"):
        return None
    margin = claim.margin or 0.0
    above = (margin, "greater")
    below = (-margin, "less")
    shift, alternative = {"not_greater": above, "not_less": below,
                          "equivalent": above if evidence.effect >= 0 else below}[claim.kind]
    return min(1.0, _larger_p(evidence, shift, alternative) * (2 if claim.kind == "equivalent" else 1))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given; each ≤ 1)."""
    order = np.argsort(p_values)
    adjusted = np.empty(len(p_values))
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted.tolist()


def holm_levels(p_values: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """The level Holm's step-down tests each p at (same order as given): ``alpha / (m − r + 1)`` for the
    r-th smallest while every smaller one is rejected; from the first that is not, that step's level for it
    and every larger p. A p is rejected (its Holm-adjusted p is below ``alpha``) exactly when it is below its
    level, so an interval at this level agrees with the verdict."""
    m = len(p_values)
    levels = np.empty(m)
    level = alpha / m if m else alpha
    stopped = False
    for rank, index in enumerate(np.argsort(p_values, kind="stable")):
        if not stopped:
            level = alpha / (m - rank)
            stopped = not p_values[index] < level
        levels[index] = level
    return levels.tolist()


def _resamples_beyond(level: float, n_samples: int) -> int:
    """The most resamples that may lie beyond a shift the bootstrap rejects at ``level``: its p,
    ``(count + 1) / (n_samples + 1)``, is below ``level`` exactly when ``count`` is at most this (−1: never)."""
    return math.ceil(level * (n_samples + 1) - 1) - 1


def _bound(evidence: Evidence, level: float, side: str) -> float:
    """The one-sided bound (``side`` ``"lower"`` or ``"upper"``) of the differences that the claim's test
    (paired t and bootstrap, both must reject) does not reject at ``level``: the bound of the weaker part."""
    samples = np.sort(evidence.samples)
    allowed = _resamples_beyond(level, len(samples))
    if side == "lower":
        bootstrap = -math.inf if allowed < 0 else float(samples[allowed])
    else:
        bootstrap = math.inf if allowed < 0 else float(samples[len(samples) - 1 - allowed])
    seed_level = evidence.seed_level
    if seed_level.get("se") is None:
        return bootstrap
    half = float(stats.t.isf(level, seed_level["df"])) * seed_level["se"]
    if side == "lower":
        return min(bootstrap, seed_level["difference"] - half)
    return max(bootstrap, seed_level["difference"] + half)


def _two_sided_interval(evidence: Evidence, level: float) -> tuple[float, float]:
    """The differences the claim's two-sided test against them does not reject at ``level``: the paired t's
    interval joined with the centred bootstrap's (``effect ± q``, the test of :func:`_bootstrap_p`)."""
    deviations = np.sort(np.abs(evidence.samples - evidence.effect))[::-1]
    allowed = _resamples_beyond(level, len(deviations))
    q = math.inf if allowed < 0 else float(deviations[allowed])
    low, high = evidence.effect - q, evidence.effect + q
    seed_level = evidence.seed_level
    if seed_level.get("se") is not None:
        half = float(stats.t.isf(level / 2, seed_level["df"])) * seed_level["se"]
        low, high = min(low, seed_level["difference"] - half), max(high, seed_level["difference"] + half)
    return low, high


def holm_interval(claim: Claim, evidence: Evidence, level: float, family_size: int) -> list[float]:
    """``ci_holm`` (see the module docstring): the interval that agrees with the verdict, the claim tested at
    ``level`` (its Holm level) and its contradiction, for a margin kind, at Bonferroni's ``ALPHA / family_size``.
    A side that no resample count could reject at its level is unbounded (``None``)."""
    against = ALPHA / family_size
    if claim.kind in ("greater", "less"):
        bounds = _two_sided_interval(evidence, level)
    elif claim.kind == "not_less":
        bounds = (_bound(evidence, level, "lower"), _bound(evidence, against, "upper"))
    elif claim.kind == "not_greater":
        bounds = (_bound(evidence, against, "lower"), _bound(evidence, level, "upper"))
    else:
        bounds = (_bound(evidence, level, "lower"), _bound(evidence, level, "upper"))
    return [bound if math.isfinite(bound) else None for bound in bounds]


def minimum_detectable_effect(seed_level: dict[str, Any], level: float, two_sided: bool,
                              power: float = POWER) -> float | None:
    """The smallest true distance from the null that a paired t over the seeds of ``seed_level`` (its
    ``se`` and ``df``) detects with probability ``power`` at ``level`` (two-sided or one-sided), from the
    noncentral t; ``None`` when the per-seed differences do not vary."""
    se, df = seed_level.get("se"), seed_level.get("df")
    if se is None:
        return None
    critical = float(stats.t.isf(level / 2 if two_sided else level, df))

    def shortfall(noncentrality: float) -> float:
        return float(stats.nct.sf(critical, df, noncentrality)) - power

    upper = critical + 10.0
    while shortfall(upper) < 0:
        upper *= 2
    return float(brentq(shortfall, 0.0, upper)) * se


def seeds_needed(entry: dict[str, Any], effect: float, most: int = 1000) -> int | None:
    """How many seeds a judged ``greater``/``less`` claim would need for its paired t to detect a true
    ``effect`` (in the claim's unit) with 80 % power at the level Holm gave it in this run, if the seeds
    varied as they did here (the per-seed standard deviation of ``entry["seed_level"]``): the smallest
    ``n`` whose :func:`minimum_detectable_effect` is at most ``|effect|``. ``None`` when the seeds did not
    vary, ``effect`` is 0, the claim has a margin, or more than ``most`` seeds would be needed."""
    seed_level = entry.get("seed_level") or {}
    if entry.get("kind") not in ("greater", "less") or seed_level.get("se") is None or effect == 0:
        return None
    spread = seed_level["se"] * math.sqrt(seed_level["df"] + 1)

    def detects(n: int) -> bool:
        mde = minimum_detectable_effect({"se": spread / math.sqrt(n), "df": n - 1}, entry["level"], True)
        return mde is not None and mde <= abs(effect)

    if not detects(most):
        return None
    low, high = 1, most   # detects(high) holds; detects(low) does not (one seed has no spread)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if detects(middle) else (middle, high)
    return high


def interval_agrees(entry: dict[str, Any]) -> bool:
    """Whether a judged claim's stored ``ci_holm`` says what its verdict says (the rule of the module
    docstring; an unbounded side is ``None``). ✗ of an ``equivalent`` claim comes from its two-sided test
    beyond the margin, which the interval does not carry: it only has to leave the margin band."""
    if entry["verdict"] == "not tested":
        return entry.get("ci_holm") is None
    low, high = entry["ci_holm"]
    low, high = -math.inf if low is None else low, math.inf if high is None else high
    delta = entry["margin"] or 0.0
    supports, contradicts = {
        "greater": (low > 0, high < 0), "less": (high < 0, low > 0),
        "not_less": (low > -delta, high < -delta), "not_greater": (high < delta, low > delta),
        "equivalent": (-delta < low and high < delta, None)}[entry["kind"]]
    if entry["verdict"] == "✓":
        return supports
    if entry["verdict"] == "✗":
        return contradicts if contradicts is not None else not supports
    return not supports and not contradicts


VERDICT_FIELDS = ("kind", "effect", "p_holm", "p_against_corrected")
"""What :func:`verdict` reads from a judged claim's stored entry."""


def verdict(kind: str, effect: float, p_holm: float, p_against_corrected: float | None = None) -> str:
    """✓ / ✗ / ? by the rule of the module docstring, from what a judged claim stores (so a chapter can
    check every stored verdict: ``verdict(**{k: entry[k] for k in VERDICT_FIELDS})``)."""
    significant = p_holm < ALPHA
    if kind in ("greater", "less"):
        if not significant or effect == 0:
            return "?"
        return "✓" if (effect > 0) == (kind == "greater") else "✗"
    if significant:
        return "✓"
    return "✗" if p_against_corrected is not None and p_against_corrected < ALPHA else "?"


def seeds_precondition(evidence: Evidence) -> NotTested | None:
    """``NotTested`` when an arm has fewer than :data:`MIN_SEEDS` trained seeds."""
    if min(evidence.seeds) < MIN_SEEDS:
        return NotTested(f"fewer than {MIN_SEEDS} trained seeds in an arm ({evidence.seeds[0]} vs {evidence.seeds[1]})")
    return None


def acted(evidence: Evidence, expected_sign: int) -> bool:
    """Whether an intervention measurably moved its mechanism measure in the expected direction: the whole
    95 % interval of the difference (intervention − control) on that side of 0."""
    low, high = evidence.ci95
    return low > 0 if expected_sign > 0 else high < 0


def idle_interventions(a: str, b: str, measure: str, mechanisms: dict[str, dict[str, Any]]) -> list[str]:
    """The arms of a claim on ``a`` against ``b`` in ``measure`` whose intervention did not act.

    ``mechanisms`` maps an intervention to ``{"measure", "control", "acted"}`` (what it should change, against
    what). An arm counts when it is an intervention, the claim is not about its own measure, and it is not the
    other arm's control (coverage against the pointer model needs coverage to act, not the pointer)."""
    idle = []
    for arm, other in ((a, b), (b, a)):
        row = mechanisms.get(arm)
        if row is None or row["measure"] == measure or mechanisms.get(other, {}).get("control") == arm:
            continue
        if not row["acted"]:
            idle.append(arm)
    return idle


def judge_family(judged: dict[str, tuple[Claim, Evidence | NotTested]]) -> dict[str, dict[str, Any]]:
    """Verdicts for a chapter's family of claims, Holm-corrected over the tested ones.

    Args:
        judged: ``{name: (claim, evidence)}``, the evidence a :class:`NotTested` where a precondition
            failed (fewer seeds than :data:`MIN_SEEDS` becomes one here too).

    Returns:
        ``{name: entry}``, each entry with ``verdict``, ``kind``, ``effect``, ``ci_holm`` (the interval that
        agrees with the verdict) and its ``level``, ``ci95`` (the bootstrap's, descriptive), ``p``, ``p_holm``,
        ``p_against`` and ``p_against_corrected`` (``None`` but for the margin kinds), ``mde``, ``seeds``,
        ``margin``, ``paper``, ``paper_effect``, ``unit``, ``test`` and ``seed_level``; a "not tested" entry
        has ``reason`` and ``details`` instead, and no p.
    """
    tested: dict[str, tuple[Claim, Evidence]] = {}
    out: dict[str, dict[str, Any]] = {}
    for name, (claim, evidence) in judged.items():
        if isinstance(evidence, Evidence):
            evidence = seeds_precondition(evidence) or evidence
        base = {"kind": claim.kind, "margin": claim.margin, "paper": claim.paper, "paper_effect": claim.paper_effect,
                "unit": claim.unit}
        if isinstance(evidence, NotTested):
            out[name] = {"verdict": "not tested", **base, "reason": evidence.reason, "details": evidence.details,
                         "effect": None, "ci_holm": None, "level": None, "ci95": None, "p": None,
                         "p_holm": None, "p_against": None, "p_against_corrected": None, "mde": None,
                         "seeds": None}
        else:
            tested[name] = (claim, evidence)
            out[name] = base
    raw = {name: p_value(claim, evidence) for name, (claim, evidence) in tested.items()}
    adjusted = dict(zip(raw, holm(list(raw.values())))) if raw else {}
    levels = dict(zip(raw, holm_levels(list(raw.values())))) if raw else {}
    for name, (claim, evidence) in tested.items():
        against = p_against(claim, evidence)
        corrected = None if against is None else min(1.0, len(tested) * against)
        out[name].update(verdict=verdict(claim.kind, evidence.effect, adjusted[name], corrected),
                         effect=evidence.effect,
                         ci_holm=holm_interval(claim, evidence, levels[name], len(tested)), level=levels[name],
                         ci95=list(evidence.ci95), p=raw[name], p_holm=adjusted[name], p_against=against,
                         p_against_corrected=corrected,
                         mde=minimum_detectable_effect(evidence.seed_level, levels[name],
                                                       claim.kind in ("greater", "less")),
                         seeds=list(evidence.seeds), test=evidence.test, seed_level=evidence.seed_level)
    return {name: {"verdict": out[name].pop("verdict"), **out[name]} for name in judged}
