"""Zhang et al.'s summarization claims (§VII-B, Table V) judged on the runs of experiment ``summarization``.

Every verdict follows :mod:`~sparse_tutorial.experiments.verdicts`. ROUGE-L (``rougeLsum``) differences are
tested by a paired bootstrap over test documents with the seeds pooled (seed ``s`` of one system is paired
with seed ``s`` of the other; a Lead baseline has no seed and is paired with every seed); what a mechanism is
meant to change (entropy per token, repeated trigrams, ``<unk>``) by a paired t-test over seeds.

"On par with Lead-3" is an equivalence claim: ✓ when the 95 % interval of the difference lies within
±:data:`PAR_MARGIN` ROUGE-L, ✗ when it lies wholly outside, ? otherwise.
"""
from __future__ import annotations

from typing import Any, Sequence

from sparse_tutorial.experiments.verdicts import SIGNIFICANCE, bootstrap_test, claim, seed_test

PAR_MARGIN = 1.0
"""ROUGE-L points within which two systems count as "on par"."""

POINTER, COVERAGE, COV_ENT = "ABS+Pointer", "ABS+Pointer+Cov", "ABS+Pointer+Cov+Ent (λ=0.02)"
BOOTSTRAP = "paired bootstrap over test documents, seeds pooled"
SEED_TEST = "paired t-test over seeds"

Scores = dict[str, list[list[float]]]
"""``{system: [per-document ROUGE-L of seed 0, seed 1, ...]}``."""


def entropy_systems(names: Sequence[str]) -> dict[float, str]:
    """``{λ: name}`` of the ``ABS+Pointer+Ent (λ=…)`` rows among ``names``."""
    prefix = "ABS+Pointer+Ent (λ="
    return {float(name[len(prefix):-1]): name for name in names if name.startswith(prefix)}


def equivalence_verdict(ci95: tuple[float, float], margin: float = PAR_MARGIN) -> str:
    """✓ if the interval lies within ±``margin``, ✗ if it lies wholly outside it, ? otherwise."""
    low, high = ci95
    if -margin < low and high < margin:
        return "✓"
    return "✗" if low >= margin or high <= -margin else "?"


def _combined(parts: list[dict[str, Any]], paper: str) -> dict[str, Any]:
    """"For every λ": ✗ if any part is ✗, ✓ if every part is ✓, else ?; the largest p and smallest gain."""
    verdicts = [part["verdict"] for part in parts]
    combined = "✗" if "✗" in verdicts else ("✓" if all(v == "✓" for v in verdicts) else "?")
    return claim(paper, min(part["difference"] for part in parts), max(part["p"] for part in parts),
                 BOOTSTRAP + ", every λ against the pointer model", verdict_override=combined)


def _best_lambda(scores: Scores, entropy: dict[float, str], claimed: float, paper: str) -> dict[str, Any]:
    """Is ``claimed`` the best λ? ✗ when a rival beats it significantly, ✓ when it beats every rival."""
    rivals = {lam: bootstrap_test(scores[name], scores[entropy[claimed]])
              for lam, name in entropy.items() if lam != claimed}
    strongest = max(rivals, key=lambda lam: rivals[lam][0])
    difference, p, ci95 = rivals[strongest]
    if difference > 0 and p < SIGNIFICANCE:
        outcome = "✗"
    else:
        outcome = "✓" if all(d < 0 and q < SIGNIFICANCE for d, q, _ in rivals.values()) else "?"
    return claim(paper, -difference, p, f"{BOOTSTRAP}, λ = {claimed:g} against every other λ; the strongest "
                 f"rival is λ = {strongest:g}", ci95=(-ci95[1], -ci95[0]), verdict_override=outcome)


def judge(scores: Scores, per_seed: dict[str, list[dict[str, float]]], lead: dict[str, list[float]]
          ) -> dict[str, dict[str, Any]]:
    """Every claim the systems in ``scores`` allow: ``{claim: verdicts.claim's dict}``.

    Args:
        scores: per-document ROUGE-L per system and seed (:data:`Scores`).
        per_seed: each system's metrics per seed (``entropy_per_token``, ``repeated_trigrams_percent``,
            ``unk_percent_oov``, ...).
        lead: per-document ROUGE-L of ``"Lead-1"`` and ``"Lead-3"`` on the same documents.
    """
    claims: dict[str, dict[str, Any]] = {}

    def better(name: str, system: str, other: str, paper: str) -> dict[str, Any] | None:
        if system in scores and other in scores:
            difference, p, ci95 = bootstrap_test(scores[system], scores[other])
            claims[name] = claim(paper, difference, p, BOOTSTRAP, ci95=ci95)
            return claims[name]
        return None

    def lowers(name: str, system: str, other: str, key: str, paper: str) -> None:
        if system in per_seed and other in per_seed:
            values, others = ([run[key] for run in per_seed[n]] for n in (system, other))
            claims[name] = claim(paper, *seed_test(values, others), SEED_TEST, claimed_sign=-1)

    better("the pointer improves over ABS", POINTER, "ABS", "Table V: the pointer 'remarkably' improves ROUGE over ABS")
    entropy = entropy_systems(list(scores))
    parts = [part for lam, name in sorted(entropy.items())
             if (part := better(f"+Ent (λ = {lam:g}) improves over the pointer model", name, POINTER,
                                f"Table V: better than ABS+Pointer with λ = {lam:g}")) is not None]
    if parts:
        claims["entropy improves the pointer model for every λ"] = _combined(
            parts, "Table V: entropy regularization 'boosts the summarization quality no matter which value is "
                   "used for λ'")
    if 0.04 in entropy and len(entropy) > 1:
        claims["λ = 0.04 is the best entropy weight"] = _best_lambda(
            scores, entropy, 0.04, "Table V: λ = 0.04 best, 34.66 vs 33.42 ROUGE-L (against See et al.'s "
                                   "reported score, not a run of Zhang et al.'s own)")
    better("coverage improves over the pointer model", COVERAGE, POINTER,
           "Table V: coverage is 'dramatically useful'")
    better("Cov+Ent improves over Cov", COV_ENT, COVERAGE,
           "Table V: further improved by the entropy regularizer, especially with λ = 0.02")
    if scores:
        best = max(scores, key=lambda name: sum(map(sum, scores[name])) / sum(map(len, scores[name])))
        for name, per_document in lead.items():
            difference, p, ci95 = bootstrap_test(scores[best], [per_document] * len(scores[best]))
            claims[f"{name} is on par with the best abstractive system"] = claim(
                "§VII-B: the abstractive models 'can only perform on par with Lead-3'", difference, p,
                f"{BOOTSTRAP}; best abstractive system: {best}; on par = 95 % interval within "
                f"±{PAR_MARGIN:g} ROUGE-L", ci95=ci95, verdict_override=equivalence_verdict(ci95))
    if 0.04 in entropy:
        lowers("the entropy penalty (λ = 0.04) lowers the attention entropy", entropy[0.04], POINTER,
               "entropy_per_token", "§VII-B / chapter 4: the penalty sharpens attention")
    lowers("coverage reduces repeated trigrams", COVERAGE, POINTER, "repeated_trigrams_percent",
           "See et al.: coverage removes repetition")
    lowers("the pointer removes <unk> on OOV-heavy documents", POINTER, "ABS", "unk_percent_oov",
           "See et al.: the pointer copies out-of-vocabulary words")
    return claims
