"""Zhang et al.'s claims on translation (§VII-A, Tables I, II and IV), fixed before the stored run, and how
chapter 10 judges them (:mod:`~sparse_tutorial.stats.inference`). The alignment claims of Table III
are :mod:`~sparse_tutorial.experiments.alignment.claims`.

The paper's German→English results are its Table II, whose numbers did not survive the text extraction;
§VII-A states its findings: "NMT+Entropy outperforms NMT+Coverage and NMT+Cov+Ent performs best", and the
two regularizers are "complementary" to coverage. Tables I and IV (Chinese→English) make the other claims,
said to hold for German→English as "similar phenomena"; each claim names its table. Margins are in BLEU
points (0.5, about the resolution of a 1,000-verse test set over 3 seeds).

**Preconditions** ("not tested" otherwise): every arm has 3 trained seeds; every intervention in the claim
acted (:data:`MECHANISMS`: its measure moved beyond its interval against its control).
"""
from __future__ import annotations

from typing import Any

from sparse_tutorial.stats.inference import (
    Claim, Comparison, Evidence, NotTested, acted, idle_interventions, judge_family,
)

BLEU_MARGIN = 0.5


def _bleu(paper: str, kind: str = "greater", paper_effect: float | None = None) -> Claim:
    margin = BLEU_MARGIN if kind in ("equivalent", "not_greater", "not_less") else None
    return Claim(paper, kind=kind, margin=margin, paper_effect=paper_effect, unit="BLEU")


CLAIMS: dict[str, Comparison] = {
    "+Entropy beats +Coverage (Table II)": Comparison(
        _bleu("Table II, §VII-A: NMT+Entropy outperforms NMT+Coverage (German→English)"), "+Entropy", "+Coverage", "bleu"),
    "+Cov+Ent beats +Entropy, the best system (Table II)": Comparison(
        _bleu("Table II, §VII-A: NMT+Cov+Ent performs best (German→English); Table I: +1.08 vs +0.69 over NMT",
              paper_effect=0.39), "+Cov+Ent", "+Entropy", "bleu"),
    "+Cov+Ent beats +Coverage: complementary (Tables I-II)": Comparison(
        _bleu("§VII-A: sparsity regularization and coverage are complementary (Tables I and II)",
              paper_effect=0.67), "+Cov+Ent", "+Coverage", "bleu"),
    "+Entropy beats NMT (Table I)": Comparison(
        _bleu("Table I: +0.69 BLEU over NMT, significant (Chinese→English)", paper_effect=0.69), "+Entropy", "NMT", "bleu"),
    "+Coverage beats NMT (Table I)": Comparison(
        _bleu("Table I: +0.41 BLEU over NMT (Chinese→English)", paper_effect=0.41), "+Coverage", "NMT", "bleu"),
    "+L∞ on par with +Coverage (Table I)": Comparison(
        _bleu("Table I: NMT+L∞ achieves comparable results with NMT+Coverage", kind="equivalent"), "+L∞", "+Coverage",
        "bleu"),
    "+Entropy beats +L∞ (Table I)": Comparison(
        _bleu("Table I: NMT+Entropy outperforms NMT+L∞"), "+Entropy", "+L∞", "bleu"),
    "+Sparsemax gains a little over NMT (Table I)": Comparison(
        _bleu("Table I: +0.28 BLEU on average, marginal", paper_effect=0.28), "+Sparsemax", "NMT", "bleu"),
    "+Temp 0.8 at most on par with NMT (Table I)": Comparison(
        _bleu("Table I: at most on par with the baseline at τ = 0.8", kind="not_greater"), "+Temp 0.8", "NMT", "bleu"),
    **{f"+Temp {tau} hurts BLEU (Table I)": Comparison(
        _bleu("Table I: quality decreases dramatically below τ = 0.4", kind="less"), f"+Temp {tau}", "NMT", "bleu")
       for tau in ("0.2", "0.1")},
    "+Gumbel no better than NMT (Table I)": Comparison(
        _bleu("Table I: Gumbel-softmax cannot lead to better performance", kind="not_greater"), "+Gumbel", "NMT",
        "bleu"),
    "+Entropy lowers the entropy per token (Table I)": Comparison(
        Claim("Table I, last column: lower entropy per token than NMT", kind="less", unit="nats/token"),
        "+Entropy", "NMT", "entropy"),
    **{f"λ = {lam:g} on par with λ = 0.01 (Table IV)": Comparison(
        _bleu("Table IV: λ ∈ {0.005, 0.02} reach comparable performance to λ = 0.01", kind="equivalent"),
        f"λ = {lam:g}", "+Entropy", "bleu") for lam in (0.005, 0.02)},
    **{f"λ = {lam:g} hurts against λ = 0.01 (Table IV)": Comparison(
        _bleu("Table IV: larger λ (0.04, 0.08) much decrease the translation quality", kind="less"),
        f"λ = {lam:g}", "+Entropy", "bleu") for lam in (0.04, 0.08)},
}
"""The translation claims: ``{name: Comparison}``; arms are Table I systems or ``"λ = x"`` of the sweep."""

MECHANISMS: dict[str, tuple[str, str, int]] = {
    "+Coverage": ("repeated_bigrams", "NMT", -1),
    "+Temp 0.8": ("entropy", "NMT", -1), "+Temp 0.6": ("entropy", "NMT", -1), "+Temp 0.4": ("entropy", "NMT", -1),
    "+Temp 0.2": ("entropy", "NMT", -1), "+Temp 0.1": ("entropy", "NMT", -1),
    "+Sparsemax": ("zero_share", "NMT", +1),
    "+L∞": ("max_weight", "NMT", +1),
    "+Entropy": ("entropy", "NMT", -1),
    "+Cov+Ent": ("entropy", "+Coverage", -1),
    "+Entropy from epoch 3": ("entropy", "NMT", -1),
    "λ = 0.005": ("entropy", "NMT", -1), "λ = 0.02": ("entropy", "NMT", -1),
    "λ = 0.04": ("entropy", "NMT", -1), "λ = 0.08": ("entropy", "NMT", -1),
}
"""What each intervention should change, against which control, and in which direction: ``{arm: (measure,
control, sign)}``. Gumbel-softmax adds its noise in training only (its test attention is a plain softmax), so
no test-time measure was fixed for it before the run and its claim is judged without this precondition;
chapter 9 shows what the noise did to the stored systems' test attention."""


EXPLORATORY: dict[str, tuple[str, str, str]] = {
    "+Entropy from epoch 3 against NMT": ("+Entropy from epoch 3", "NMT", "bleu"),
    "+Entropy from epoch 3 against +Entropy": ("+Entropy from epoch 3", "+Entropy", "bleu"),
}
"""Our own comparisons, not the paper's, named after the runs had begun: ``{name: (arm A, arm B, measure)}``.
They are shown with their intervals and never judged (no verdict, outside the Holm family of :func:`judge`)."""


def exploratory_table(evidence: dict[tuple[str, str, str], Evidence]) -> dict[str, dict[str, Any]]:
    """The :data:`EXPLORATORY` differences the runs allow: ``{name: {a, b, measure, effect, ci95, seeds}}``."""
    return {name: {"a": a, "b": b, "measure": measure, "effect": found.effect, "ci95": list(found.ci95),
                   "seeds": list(found.seeds)}
            for name, (a, b, measure) in EXPLORATORY.items() if (found := evidence.get((a, b, measure))) is not None}


def mechanism_table(evidence: dict[tuple[str, str, str], Evidence]) -> dict[str, dict[str, Any]]:
    """Each intervention's own measure against its control: ``{arm: {measure, control, effect, ci95,
    acted}}`` from ``evidence[(arm, control, measure)]``."""
    table = {}
    for arm, (measure, control, sign) in MECHANISMS.items():
        found = evidence.get((arm, control, measure))
        if found is not None:
            table[arm] = {"measure": measure, "control": control, "expected_sign": sign, "effect": found.effect,
                          "ci95": list(found.ci95), "seeds": list(found.seeds), "acted": acted(found, sign)}
    return table


def judge(evidence: dict[tuple[str, str, str], Evidence], mechanisms: dict[str, dict[str, Any]]
          ) -> dict[str, dict[str, Any]]:
    """Chapter 10's family of translation claims, Holm-corrected together.

    Args:
        evidence: ``{(arm, other, measure): Evidence}`` for every comparison that the runs allow.
        mechanisms: :func:`mechanism_table`.
    """
    judged: dict[str, tuple[Claim, Evidence | NotTested]] = {}
    for name, comparison in CLAIMS.items():
        found = evidence.get((comparison.a, comparison.b, comparison.measure))
        idle = idle_interventions(comparison.a, comparison.b, comparison.measure, mechanisms)
        if found is None:
            judged[name] = (comparison.claim, NotTested(f"{comparison.a} or {comparison.b} has no stored run"))
        elif idle:
            judged[name] = (comparison.claim, NotTested(
                "the intervention did not act: " + ", ".join(f"{arm} did not move its {mechanisms[arm]['measure']}"
                                                             for arm in idle), {arm: mechanisms[arm] for arm in idle}))
        else:
            judged[name] = (comparison.claim, found)
    return judge_family(judged)
