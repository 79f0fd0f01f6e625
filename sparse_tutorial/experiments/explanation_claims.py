"""The claims of chapter 13 (Serrano & Smith, Wiegreffe & Pinter, 2019) judged on the runs of experiment
``explanation``.

Every verdict is computed by the rule of :mod:`~sparse_tutorial.experiments.verdicts` and can come out
either way (for a "no better" claim, ✗ means a significant difference). Each test is a paired bootstrap
over test sentences of a per-sentence 0/1 outcome (a correct decision, or a decision that flips), seeds
pooled: seed ``s`` of one model is paired with seed ``s`` of the other
(:func:`~sparse_tutorial.experiments.verdicts.bootstrap_test`).
"""
from __future__ import annotations

from typing import Any, Sequence

from sparse_tutorial.experiments.verdicts import bootstrap_test, claim, no_better_verdict

PerSeed = dict[str, Sequence[Sequence[int]]]
"""``{model or rule: [per-example 0/1 of seed 0, seed 1, ...]}``."""


def bootstrap_claim(paper: str, outcomes: PerSeed, name: str, other: str, what: str, claimed_sign: int = 1,
                    no_better: bool = False) -> dict[str, Any]:
    """:func:`~sparse_tutorial.experiments.verdicts.claim` on the difference of ``outcomes[name]`` and
    ``outcomes[other]`` (the share of ``what``), tested by a paired bootstrap over their examples;
    ``no_better``: the claim is that ``name`` is no higher (✗ only for a significant gain)."""
    difference, p, ci95 = bootstrap_test(outcomes[name], outcomes[other])
    seeds, items = min(len(outcomes[name]), len(outcomes[other])), len(outcomes[name][0])
    test = (f"paired bootstrap over {items} test sentences ({seeds} seeds pooled) of the share of {what}, "
            f"{name} − {other}" + ("; ✗ only for a significant gain" if no_better else ""))
    return claim(paper, difference, p, test, claimed_sign, ci95,
                 verdict_override=no_better_verdict(difference, p) if no_better else None)


def judge(correct: PerSeed, flips: PerSeed) -> dict[str, dict[str, Any]]:
    """Every claim: ``{claim: {"verdict", "p", "difference", "test", "paper", "ci95"}}``.

    Args:
        correct: per model (``learned``, ``uniform_trained``, ``frozen_trained``, ``adversary_trained``,
            ``encoder_free_frozen``, ``encoder_free_uniform``), per seed, 1 for each test sentence it
            classifies correctly.
        flips: per way of choosing the deleted token (``attention``, ``random``, ...), per seed, 1 for each
            test sentence whose decision flips.
    """
    decisions = "correct decisions"
    return {
        "erasing the top-attended token flips more decisions than erasing a random one": bootstrap_claim(
            "Serrano & Smith (2019), the heat-map reading: the most attended token is the one the decision rests "
            "on, so deleting it flips the decision more often than deleting a random token",
            flips, "attention", "random", "decisions that flip"),
        "learned attention is no more accurate than uniform attention": bootstrap_claim(
            "Wiegreffe & Pinter (2019) §3, Jain & Wallace (2019): on some tasks (SST among them) a model "
            "trained with uniform attention does as well as one with learned attention",
            correct, "learned", "uniform_trained", decisions, no_better=True),
        "the base model's attention frozen into a BiLSTM beats uniform attention": bootstrap_claim(
            "Wiegreffe & Pinter (2019) §4 (in their model without context; here in a BiLSTM): a model given "
            "the base model's attention beats one given uniform weights", correct, "frozen_trained",
            "uniform_trained", decisions),
        "without an encoder, the base model's frozen attention beats uniform attention": bootstrap_claim(
            "Wiegreffe & Pinter (2019) §4, Table 3: an MLP over word embeddings given the trained LSTM's "
            "attention beats the same MLP with uniform weights", correct, "encoder_free_frozen",
            "encoder_free_uniform", decisions),
        "a trained adversary, attending unlike the base model, is as accurate": bootstrap_claim(
            "Wiegreffe & Pinter (2019) §4: a model trained to attend unlike the base model (large JS divergence) "
            "is about as accurate", correct, "learned", "adversary_trained", decisions, no_better=True),
    }


def checks(correct: PerSeed, flips: PerSeed) -> dict[str, Any]:
    """``{"seeds", "n_test", "claims"}``: the fewest seeds and test sentences any claim of :func:`judge`
    rests on, and its claims."""
    outcomes = [*correct.values(), *flips.values()]
    return {"seeds": min(len(per_seed) for per_seed in outcomes),
            "n_test": min(len(values) for per_seed in outcomes for values in per_seed),
            "claims": judge(correct, flips)}
