"""Zhang et al.'s claims on word alignment (Table III), fixed before the stored run, and how chapter 10 judges
them (:mod:`~sparse_tutorial.stats.inference`).

Table III aligns Chinese→English; the claims are judged here on Greek→English verses with manual links. AER
is resampled by verse within each seed and judged over seeds (lower is better).

**Preconditions** ("not tested" otherwise): every arm has 3 trained seeds, and both aligners pass the
controls (:func:`alignment_controls`): they read their source (the test NLL with other verses' sources at
least :data:`SHUFFLE_NLL_GAP` nats per word above the real one, mean over seeds) and their attention is not
uniform (entropy per word at least :data:`UNIFORM_ENTROPY_GAP` nats below uniform attention's). An aligner
that attends uniformly links each English word to an arbitrary Greek word, so its AER says nothing about
its system.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sparse_tutorial.stats.inference import Claim, Comparison, Evidence, NotTested, judge_family

SHUFFLE_NLL_GAP = 0.5
UNIFORM_ENTROPY_GAP = 0.5

CLAIMS: dict[str, Comparison] = {
    "+Coverage lowers AER (Table III)": Comparison(
        Claim("Table III: coverage substantially reduces the alignment errors", kind="less", unit="AER"),
        "+Coverage", "NMT", "aer"),
    "+Entropy lowers AER (Table III)": Comparison(
        Claim("Table III: sparsity regularization substantially reduces the alignment errors", kind="less", unit="AER"),
        "+Entropy", "NMT", "aer"),
    "+Entropy lowers AER below +Coverage (Table III)": Comparison(
        Claim("Table III: NMT+Entropy performs better than NMT+Coverage", kind="less", unit="AER"),
        "+Entropy", "+Coverage", "aer"),
}
"""The alignment claims: ``{name: Comparison}`` of two aligners' AER."""


def alignment_controls(per_seed: dict[str, list[dict[str, Any]]], uniform_entropy: float) -> dict[str, Any]:
    """Whether each aligner reads its source and leaves uniform attention: ``{system: {shuffle_nll_gap,
    below_uniform_entropy, passes, failing_seeds}}``. ``passes`` is the precondition fixed before the run
    (means over seeds); ``failing_seeds`` names the seeds (their ``seed``, else their position) that fail a
    control on their own, which the mean can hide."""
    out = {}
    for name, seeds in per_seed.items():
        gaps = np.array([s["shuffled_source_nll"] - s["test_nll"] for s in seeds])
        below = uniform_entropy - np.array([s["entropy_per_token"] for s in seeds])
        fails = (gaps < SHUFFLE_NLL_GAP) | (below < UNIFORM_ENTROPY_GAP)
        out[name] = {"shuffle_nll_gap": float(gaps.mean()), "below_uniform_entropy": float(below.mean()),
                     "passes": bool(gaps.mean() >= SHUFFLE_NLL_GAP and below.mean() >= UNIFORM_ENTROPY_GAP),
                     "failing_seeds": [s.get("seed", position) for position, s in enumerate(seeds) if fails[position]]}
    return out


def judge(evidence: dict[tuple[str, str], Evidence], controls: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Table III's family of claims, Holm-corrected together.

    Args:
        evidence: ``{(arm, other): Evidence}`` of AER for every comparison that the runs allow.
        controls: :func:`alignment_controls`.
    """
    judged: dict[str, tuple[Claim, Evidence | NotTested]] = {}
    for name, comparison in CLAIMS.items():
        found = evidence.get((comparison.a, comparison.b))
        failing = [arm for arm in (comparison.a, comparison.b) if not controls.get(arm, {}).get("passes")]
        if found is None:
            judged[name] = (comparison.claim, NotTested(f"{comparison.a} or {comparison.b} has no stored run"))
        elif failing:
            judged[name] = (comparison.claim, NotTested(
                "the aligners fail their controls (they must read their source and leave uniform attention): "
                + ", ".join(failing), {arm: controls.get(arm) for arm in failing}))
        else:
            judged[name] = (comparison.claim, found)
    return judge_family(judged)
