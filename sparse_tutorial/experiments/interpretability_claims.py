"""Meister et al.'s claims (2021: Table 1, Table 2, Fig. 3) judged on the runs of experiment
``interpretability``, per data set and encoder.

Every verdict is computed by the rule of :mod:`~sparse_tutorial.experiments.verdicts` and can come out
either way. The paper's variable is the sparsegen λ, a property of a trained model, so the unit of every
test is the *run* (one model: an encoder, a λ and a seed), measured by its mean over the test sentences:
Kendall's τ-b over runs between λ and that mean (the correlation the paper reports, its footnote 2), with
a bootstrap 95 % interval over runs (:func:`~sparse_tutorial.experiments.verdicts.correlation_test`).
Sparsemax is sparsegen with λ = 0; softmax has no λ and takes no part.
"""
from __future__ import annotations

from typing import Any

from sparse_tutorial.experiments.verdicts import BOOTSTRAP_SAMPLES, claim, correlation_test, no_better_verdict

ENCODER_NAMES = {"bilstm": "BiLSTM", "transformer": "Transformer"}

KENDALL = "Kendall τ-b over runs (each λ × seed) between sparsegen λ and the run's mean {measure} over its " \
          "test items; bootstrap 95 % interval over runs"


def sparsegen_runs(rows: list[dict[str, Any]], task: str, encoder: str) -> list[dict[str, Any]]:
    """The rows of ``task`` and ``encoder`` that have a sparsegen λ (sparsemax and sparsegen)."""
    return [row for row in rows
            if row["task"] == task and row["encoder"] == encoder and row["sparsegen_lambda"] is not None]


def lambda_correlation(runs: list[dict[str, Any]], key: str, n_samples: int = BOOTSTRAP_SAMPLES
                       ) -> tuple[float, float | None, tuple[float, float]]:
    """:func:`~sparse_tutorial.experiments.verdicts.correlation_test` (Kendall, ``n_samples`` bootstrap
    resamples) of λ and ``key`` over ``runs`` whose ``key`` is defined (a NaN stored as ``None`` drops its
    run); undefined (NaN, ``None``) with fewer than 3 such runs."""
    defined = [row for row in runs if row[key] is not None]
    if len(defined) < 3:
        return float("nan"), None, (float("nan"), float("nan"))
    return correlation_test([row["sparsegen_lambda"] for row in defined], [row[key] for row in defined],
                            method="kendall", n_samples=n_samples)


def judge(rows: list[dict[str, Any]], n_samples: int = BOOTSTRAP_SAMPLES) -> dict[str, dict[str, Any]]:
    """Every claim, for each data set and encoder that ``rows`` (the runs' rows) hold:
    ``{claim: {"verdict", "p", "difference", "test", "paper", "ci95"}}``; the difference is Kendall's τ-b
    (its p-value decides the verdict; ``n_samples`` bootstrap resamples give the interval)."""
    claims: dict[str, dict[str, Any]] = {}
    pairs = dict.fromkeys((row["task"], row["encoder"]) for row in rows)
    for task, encoder in pairs:
        runs = sparsegen_runs(rows, task, encoder)
        where = f"{ENCODER_NAMES.get(encoder, encoder)}, {task}"

        tau, p, ci95 = lambda_correlation(runs, "entropy_intermediate", n_samples)
        claims[f"Table 1, {where}: sparser attention does not concentrate the inputs' influence on h_p"] = claim(
            "Table 1: H̃(g_h) stays high under sparse attention (sparsemax vs softmax: BiLSTM 0.91 vs 0.93 on "
            "SST, 0.68 vs 0.75 on 20News; Transformer 0.63 vs 0.73, 0.46 vs 0.48)", tau, p,
            KENDALL.format(measure="H̃(g_h)") + "; ✗ only if τ is significantly negative", ci95=ci95,
            verdict_override="?" if p is None else no_better_verdict(-tau, p))

        tau, p, ci95 = lambda_correlation(runs, "entropy_gradient", n_samples)
        claims[f"Table 2, {where}: λ correlates negatively with the entropy of gradient importance"] = claim(
            "Table 2: correlation of λ with H̃(g_ŷ) of −0.87 (BiLSTM) and −0.81 (Transformer) on SST, −0.68 and "
            "−0.41 on 20News", tau, p, KENDALL.format(measure="H̃(g_ŷ)"), claimed_sign=-1, ci95=ci95)

        for key, measure in (("tau_gradient", "gradient"), ("tau_loo", "leave-one-out")):
            tau, p, ci95 = lambda_correlation(runs, key, n_samples)
            claims[f"Fig. 3, {where}: attention agrees less with {measure} importance as λ grows"] = claim(
                f"Fig. 3 (IMDb): Kendall τ between attention and {measure} importance falls as λ grows", tau, p,
                KENDALL.format(measure=f"τ(attention, {measure} importance)"), claimed_sign=-1, ci95=ci95)
    return claims
