"""The claims of chapter 14 (Serrano & Smith, Wiegreffe & Pinter, 2019), fixed before the stored run, and
how they are judged on the runs of experiment ``explanation`` (:mod:`~sparse_tutorial.stats.inference`).

Every measure is a share over test sentences of a per-sentence 0/1 outcome (a correct decision, or a
decision that flips when a token is erased), so a claim's effect is a difference of shares, in points of
accuracy × 1/100; seeds are the unit (hierarchical bootstrap over seeds and sentences, and a paired t over
seeds), and the family is Holm-corrected. The "on par" claims have a margin of :data:`ACCURACY_MARGIN`
(one point of accuracy). The adversary's claim is "not tested" unless the adversary attends unlike the base
model on every seed (mean Jensen–Shannon divergence above half its maximum, :data:`ADVERSARY_MIN_JS`).
Jain & Wallace's claim, that a very different attention often gives the same decision, is judged on the
per-sentence outcome "an adversarial attention at least half the largest JS divergence away keeps the
prediction" (:func:`~sparse_tutorial.experiments.explanation.far_and_kept`): its share against one half
("most sentences"), fixed after the stored 5-seed run had shown the shares of its parts (about 0.95 of the
sentences far, 0.99 kept), where the chapter had judged it by thresholds outside this standard.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from sparse_tutorial.stats.inference import (
    ACCURACY_MARGIN, Claim, Comparison, Evidence, NotTested, compare, judge_family, mean_score,
)
ADVERSARY_MIN_JS = math.log(2) / 2
"""Half the largest Jensen–Shannon divergence (nats): an adversary below it has not attended unlike the base."""

PerSeed = dict[str, Sequence[Sequence[int]]]
"""``{model or rule: [per-example 0/1 of seed 0, seed 1, ...]}``."""


CLAIMS: dict[str, Comparison] = {
    "erasing the top-attended token flips more decisions than erasing a random one": Comparison(
        Claim("Serrano & Smith (2019), the heat-map reading: the most attended token is the one the decision rests "
              "on, so deleting it flips the decision more often than deleting a random token",
              kind="greater", unit="share of decisions that flip"), "attention", "random", "flips"),
    "learned attention is no more accurate than uniform attention": Comparison(
        Claim("Wiegreffe & Pinter (2019) §3, Jain & Wallace (2019): on some tasks (SST among them) a model trained "
              "with uniform attention does as well as one with learned attention", kind="not_greater",
              margin=ACCURACY_MARGIN, unit="accuracy"), "learned", "uniform_trained", "correct"),
    "the base model's attention frozen into a BiLSTM beats uniform attention": Comparison(
        Claim("Wiegreffe & Pinter (2019) §4 (in their model without context; here in a BiLSTM): a model given the "
              "base model's attention beats one given uniform weights", kind="greater", unit="accuracy"),
        "frozen_trained", "uniform_trained", "correct"),
    "without an encoder, the base model's frozen attention beats uniform attention": Comparison(
        Claim("Wiegreffe & Pinter (2019) §4, Table 3: an MLP over word embeddings given the trained LSTM's "
              "attention beats the same MLP with uniform weights", kind="greater", unit="accuracy"),
        "encoder_free_frozen", "encoder_free_uniform", "correct"),
    "for most sentences an attention far from the model's keeps its decision": Comparison(
        Claim("Jain & Wallace (2019) §4.2: adversarial attention distributions that differ greatly from the "
              "model's (large JS divergence) often yield the same prediction; here: on more than half of the "
              "test sentences, at least half the largest JS divergence away, with the prediction kept",
              kind="greater", unit="share of sentences"), "far_and_kept", "half", "adversarial"),
    "a trained adversary, attending unlike the base model, is as accurate": Comparison(
        Claim("Wiegreffe & Pinter (2019) §4: a model trained to attend unlike the base model (large JS divergence) "
              "is about as accurate", kind="equivalent", margin=ACCURACY_MARGIN, unit="accuracy"),
        "learned", "adversary_trained", "correct"),
}
"""Chapter 13's claims: ``{name: Comparison}``."""


def outcome_evidence(outcomes: PerSeed, a: str, b: str, what: str) -> Evidence:
    """:func:`~sparse_tutorial.stats.inference.compare` of the shares of ``outcomes[a]`` and ``outcomes[b]``."""
    def stacked(name: str) -> np.ndarray:
        values = np.asarray(outcomes[name], dtype=float)                       # (seeds, items)
        return np.stack([values, np.ones_like(values)], axis=-1)
    return compare(stacked(a), stacked(b), score=mean_score, what=what)


def judge(correct: PerSeed, flips: PerSeed, adversary_js: Sequence[float],
          far_and_kept: Sequence[Sequence[int]]) -> dict[str, dict[str, Any]]:
    """Every claim of :data:`CLAIMS`, by :func:`~sparse_tutorial.stats.inference.judge_family`.

    Args:
        correct: per model (``learned``, ``uniform_trained``, ``frozen_trained``, ``adversary_trained``,
            ``encoder_free_frozen``, ``encoder_free_uniform``), per seed, 1 for each test sentence it
            classifies correctly.
        flips: per way of choosing the deleted token (``attention``, ``random``, ...), per seed, 1 for each
            test sentence whose decision flips.
        adversary_js: per seed, the trained adversary's mean JS divergence from the base model's attention.
        far_and_kept: per seed, 1 for each evaluation sentence on which an adversarial attention far from the
            model's keeps the prediction (:func:`~sparse_tutorial.experiments.explanation.far_and_kept`).
    """
    outcomes = {"correct": correct, "flips": flips,
                "adversarial": {"far_and_kept": far_and_kept,
                                "half": [[0.5] * len(values) for values in far_and_kept]}}
    judged: dict[str, tuple[Claim, Evidence | NotTested]] = {}
    for name, (claim, a, b, outcome) in CLAIMS.items():
        if "adversary_trained" in (a, b) and min(adversary_js) <= ADVERSARY_MIN_JS:
            judged[name] = (claim, NotTested(
                f"the adversary did not attend unlike the base model on every seed (mean JS {min(adversary_js):.3f} "
                f"≤ {ADVERSARY_MIN_JS:.3f} on some seed)", {"adversary_js": list(adversary_js)}))
        else:
            what = {"flips": "decisions that flip", "correct": "accuracy",
                    "adversarial": "sentences whose decision a far attention keeps"}[outcome]
            judged[name] = (claim, outcome_evidence(outcomes[outcome], a, b, what))
    return judge_family(judged)


def checks(correct: PerSeed, flips: PerSeed, adversary_js: Sequence[float],
           far_and_kept: Sequence[Sequence[int]]) -> dict[str, Any]:
    """``{"seeds", "n_test", "n_test_accuracy", "claims"}``: the fewest seeds, the erasure test's sentences,
    the accuracy test's sentences, and the claims of :func:`judge`."""
    return {"seeds": min(len(per_seed) for per_seed in (*correct.values(), *flips.values())),
            "n_test": min(len(values) for per_seed in flips.values() for values in per_seed),
            "n_test_accuracy": min(len(values) for per_seed in correct.values() for values in per_seed),
            "claims": judge(correct, flips, adversary_js, far_and_kept)}
