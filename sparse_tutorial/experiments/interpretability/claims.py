"""Meister et al.'s claims (2021: Table 1, Table 2, Fig. 3), fixed before the stored run, and how chapter 13
judges them on the runs of experiment ``interpretability`` (:mod:`~sparse_tutorial.stats.inference`),
per data set and encoder.

The paper's variable is sparsegen's λ, a property of a trained model. A **trend** claim (Table 2, Fig. 3)
is judged per trained seed: Kendall's τ-b between λ and the runs' mean measure over the test sentences
(sparsemax is λ = 0; softmax has no λ and takes no part); the effect is the mean τ-b over seeds, its
interval a hierarchical bootstrap over seeds and test sentences, and the seed-level test a t-test of the
seeds' τ-b against 0 (:func:`~sparse_tutorial.stats.inference.trend`). Table 1's "the influence stays
spread" compares sparsemax with softmax, seed by seed, with a margin of :data:`ENTROPY_MARGIN`.

**τ-b at its tie bound.** Exact zeros of sparse attention are ties, and τ-b against a tie-free importance
vector cannot exceed √(1 − share of tied pairs) (:func:`~sparse_tutorial.experiments.interpretability.tau_b_bound`).
Where the runs' mean τ-b comes within :data:`TIE_BOUND_GAP` of their mean bound at some λ, a falling τ-b can
be the bound falling, so that claim is "not tested"; the same claim on the positions attention keeps
(τ-b over its support, which has no such ties) is judged beside it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sparse_tutorial.stats.inference import (
    Claim, Evidence, NotTested, compare, judge_family, ratio_score, trend,
)

ENCODER_NAMES = {"bilstm": "BiLSTM", "transformer": "Transformer"}
ENTROPY_MARGIN = 0.1
"""Normalized entropy within which sparsemax's H̃(g_h) counts as "as spread as softmax's" (Table 1); the
paper's own gaps are 0.02 to 0.10, fixed before the stored run."""
TIE_BOUND_GAP = 0.05
"""A mean τ-b this close to its mean tie bound counts as "at the bound"."""
PAPER_TABLE_1 = {("rotten_tomatoes", "bilstm"): (0.91, 0.93), ("rotten_tomatoes", "transformer"): (0.63, 0.73),
                 ("newsgroups:hockey-vs-baseball", "bilstm"): (0.68, 0.75),
                 ("newsgroups:hockey-vs-baseball", "transformer"): (0.46, 0.48)}
"""Table 1's H̃(g_h) of (sparsemax, softmax) per data set (SST for our Rotten Tomatoes) and encoder."""
PAPER_TABLE_2 = {("rotten_tomatoes", "bilstm"): -0.87, ("rotten_tomatoes", "transformer"): -0.81,
                 ("newsgroups:hockey-vs-baseball", "bilstm"): -0.68,
                 ("newsgroups:hockey-vs-baseball", "transformer"): -0.41}
"""Table 2's correlation of λ with H̃(g_ŷ)."""


def item_statistics(rows: list[dict[str, Any]], key: str) -> np.ndarray:
    """``(len(rows), items, 2)``: each row's per-item ``key`` and a weight of 1, or ``(0, 0)`` where the value
    is undefined, so :func:`~sparse_tutorial.stats.inference.ratio_score` is the mean over defined items."""
    values = np.array([[np.nan if v is None else v for v in row["items"][key]] for row in rows], dtype=float)
    defined = ~np.isnan(values)
    return np.stack([np.where(defined, values, 0.0), defined.astype(float)], axis=-1)


def _by_seed(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The rows grouped per seed (seeds in order), each group in the order of λ; only seeds with every λ."""
    lambdas = sorted({row["sparsegen_lambda"] for row in rows})
    seeds = sorted({row["seed"] for row in rows})
    grouped = [[row for lam in lambdas for row in rows if row["seed"] == seed and row["sparsegen_lambda"] == lam]
               for seed in seeds]
    return [group for group in grouped if len(group) == len(lambdas)]


def _trend(rows: list[dict[str, Any]], key: str) -> Evidence | NotTested:
    by_seed = _by_seed(rows)
    if not by_seed or len(by_seed[0]) < 3:
        return NotTested(f"fewer than 3 values of λ with every seed ({len(by_seed[0]) if by_seed else 0})")
    lambdas = [row["sparsegen_lambda"] for row in by_seed[0]]
    return trend(lambdas, np.stack([item_statistics(group, key) for group in by_seed]), score=ratio_score,
                 what=key)


def at_tie_bound(rows: list[dict[str, Any]], key: str) -> list[float]:
    """The λ at which the runs' mean ``key`` (a τ-b) lies within :data:`TIE_BOUND_GAP` of their mean bound."""
    lambdas = sorted({row["sparsegen_lambda"] for row in rows})
    near = []
    for lam in lambdas:
        at = [row for row in rows if row["sparsegen_lambda"] == lam and row[key] is not None]
        if at and np.mean([r["tau_b_bound"] for r in at]) - np.mean([r[key] for r in at]) < TIE_BOUND_GAP:
            near.append(lam)
    return near


def judge(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every claim for each data set and encoder that ``rows`` (the runs' rows, with their ``items``) hold,
    Holm-corrected as one family: ``{claim: entry}`` (:func:`~sparse_tutorial.stats.inference.judge_family`)."""
    family: dict[str, tuple[Claim, Evidence | NotTested]] = {}
    for task, encoder in dict.fromkeys((row["task"], row["encoder"]) for row in rows):
        mine = [row for row in rows if row["task"] == task and row["encoder"] == encoder]
        sparse = [row for row in mine if row["sparsegen_lambda"] is not None]
        where = f"{ENCODER_NAMES.get(encoder, encoder)}, {task}"

        sparsemax = sorted((r for r in mine if r["projection"] == "sparsemax"), key=lambda r: r["seed"])
        softmax = sorted((r for r in mine if r["projection"] == "softmax"), key=lambda r: r["seed"])
        paper = PAPER_TABLE_1.get((task, encoder))
        claim = Claim("Table 1: H̃(g_h) stays high under sparse attention"
                      + (f" (sparsemax {paper[0]}, softmax {paper[1]})" if paper else ""), kind="not_less",
                      margin=ENTROPY_MARGIN, paper_effect=round(paper[0] - paper[1], 2) if paper else None,
                      unit="normalized entropy")
        family[f"Table 1, {where}: sparsemax spreads the inputs' influence on h_p as much as softmax"] = (
            claim, compare(item_statistics(sparsemax, "entropy_intermediate"),
                           item_statistics(softmax, "entropy_intermediate"), score=ratio_score, what="H̃(g_h)")
            if sparsemax and softmax else NotTested("sparsemax or softmax has no stored run"))

        family[f"Table 2, {where}: λ correlates negatively with the entropy of gradient importance"] = (
            Claim("Table 2: Kendall τ of λ with H̃(g_ŷ)", kind="less", paper_effect=PAPER_TABLE_2.get((task, encoder)),
                  unit="Kendall τ-b"), _trend(sparse, "entropy_gradient"))

        for key, measure in (("tau_gradient", "gradient"), ("tau_loo", "leave-one-out")):
            claim = Claim(f"Fig. 3 (IMDb): Kendall τ between attention and {measure} importance falls as λ grows",
                          kind="less", unit="Kendall τ-b")
            near = at_tie_bound(sparse, key)
            family[f"Fig. 3, {where}: attention agrees less with {measure} importance as λ grows"] = (
                claim, NotTested(f"τ-b sits within {TIE_BOUND_GAP} of its tie bound at λ = "
                                 f"{', '.join(f'{lam:g}' for lam in near)}: a falling τ-b can be the bound falling",
                                 {"lambdas": near}) if near else _trend(sparse, key))
            family[f"Fig. 3, {where}: attention agrees less with {measure} importance as λ grows "
                   "(τ over the positions attention keeps)"] = (claim, _trend(sparse, f"{key}_support"))
    return judge_family(family)
