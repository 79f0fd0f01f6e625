"""Sun & Lu's (2020) claims (Table 2, Figs. 2-5, §5), fixed before the stored run, and how chapter 12 judges
them on the runs of experiment ``classification`` (:mod:`~sparse_tutorial.stats.inference`).

**Accuracy** (Table 2, the VᵀW penalty) is the share of correct test documents. Seeds are the unit: seed
``s`` of one model is paired with seed ``s`` of the other (the same initialisation and batch order), the
95 % interval comes from a hierarchical bootstrap over seeds and documents, and the seed-level test is a
paired t over seeds. "Does not hurt" and "no gain" have a margin of
:data:`~sparse_tutorial.stats.inference.ACCURACY_MARGIN` (one point): ✓ only when the run shows the
difference is within it, never because a test failed to reject.

**Token classes** (Figs. 2-5, §5) compare the mean score of one class of tokens with another's in the same
trained model (:func:`~sparse_tutorial.stats.inference.compare_groups`): per seed, the difference of
the class means; the bootstrap resamples the seeds, then each class's tokens; the paired t runs over the
seeds' class means, so tokens are never the samples of the test.

Every task's claims are one family, Holm-corrected together (:func:`judge`); a task trained with fewer than
:data:`~sparse_tutorial.stats.inference.MIN_SEEDS` seeds has its claims "not tested".
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from sparse_tutorial.stats.inference import (
    ACCURACY_MARGIN, Claim, Evidence, NotTested, compare, compare_groups, judge_family, mean_score,
)

Model = tuple[str, float, float]
"""A trained configuration: ``(variant, scale, vtw_weight)``."""
Correct = dict[Model, list[list[int]]]
"""``{model: [per seed: 0/1 per test document]}``, seeds in the same order for every model."""
Analyses = dict[Model, list[dict[str, Any]]]
"""``{model: [per seed: token analysis]}``; an analysis is ``{"classes": {class: {"polarity": [...],
"attention": [...]}}}`` with, on a binary task, ``"average_weights": {class: [...]}`` and, for DP, ``"vtw"``."""

TABLE_2_SCALES = (0.001, 1, 10, 20, 50, 100, 10000)
"""The scaling factors λ of Sun & Lu's Table 2."""
PAPER_TABLE_2 = {
    "rotten_tomatoes": ("RT", "SST", {"DP": (55.3, 74.4, 82.2, 81.4, 80.8, 81.2, 79.6),
                                      "DP-L": (79.8, 81.2, 81.7, 80.9, 82.0, 81.1, 81.4),
                                      "DP-A": (67.9, 73.4, 80.8, 81.0, 81.5, 80.7, 79.3),
                                      "AD": (62.8, 73.4, 80.3, 81.2, 79.9, 80.8, 80.8)}),
    "newsgroups:hockey-vs-baseball": ("20News I", "20News I", {"DP": (54.8, 88.4, 92.8, 93.5, 93.3, 92.8, 92.8),
                                                               "DP-L": (88.6, 93.0, 91.2, 92.2, 92.3, 91.2, 92.0),
                                                               "DP-A": (78.6, 85.3, 92.8, 93.5, 92.2, 92.8, 93.0),
                                                               "AD": (49.4, 87.6, 92.0, 91.2, 91.7, 93.3, 92.0)}),
    "newsgroups:motorcycles-med-guns": ("20News II", "20News II",
                                        {"DP": (31.8, 85.4, 93.4, 94.9, 94.9, 94.9, 94.5),
                                         "DP-L": (90.1, 92.3, 93.4, 94.2, 92.3, 93.1, 93.8),
                                         "DP-A": (64.6, 88.3, 91.7, 93.3, 92.9, 92.9, 92.5),
                                         "AD": (59.2, 86.7, 90.0, 92.1, 93.8, 92.9, 92.9)}),
}
"""Per task of :data:`~sparse_tutorial.experiments.classification.TASKS`: (our short name, the paper's data
set, its Table 2 test accuracies (%) per variant at :data:`TABLE_2_SCALES`). Rotten Tomatoes stands in for
SST (whose sentences come from Rotten Tomatoes)."""

TOKEN_CLAIMS = (("polarity", "positive", 1, "positive tokens' polarity scores above neutral"),
                ("polarity", "negative", -1, "negative tokens' polarity scores below neutral"),
                ("attention", "positive", 1, "positive tokens' attention scores above neutral"),
                ("attention", "negative", 1, "negative tokens' attention scores above neutral"))
"""Figs. 2 and 4: ``(score, token class, claimed sign against the neutral tokens, the claim)``."""

TERM_D_SIDES = (("term D raises the attention of the class VᵀW's sign favours",
                 "the class favoured by the sign of VᵀW: attention scores above neutral (term D)"),
                ("the other class depends on whether terms A–C outweigh term D",
                 "the class disfavoured by the sign of VᵀW: attention scores above neutral"))
"""Fig. 2's "polarity tokens get larger attention scores than neutral ones" for DP, split as Sun & Lu's eq. 27
splits it: term D adds λ·VᵀW·(polarity) to a token's attention score, so the class whose polarity has the
sign of VᵀW is pushed up and the other down, and seeds whose VᵀW has opposite signs cannot be pooled by
"positive" and "negative" (on 20 Newsgroups I one seed of five has VᵀW < 0). Each seed's tokens are taken by
the sign of its own VᵀW (fixed after the 5-seed run was seen, when the pooled claims came out mixed)."""


def _by_vtw_sign(analysis: dict[str, Any]) -> tuple[str, str]:
    """``(favoured, other)`` polarity class of one seed's dot-product model: positive first when VᵀW > 0."""
    return ("positive", "negative") if analysis["vtw"] > 0 else ("negative", "positive")


Judged = dict[str, tuple[Claim, "Evidence | NotTested"]]
"""``{claim name: (claim, evidence)}`` before Holm's correction (:func:`judge` applies it)."""


def paper_accuracy(task: str, variant: str, scale: float) -> float:
    """Sun & Lu's Table 2 accuracy (%) of ``variant`` at ``scale`` on the data set ``task`` stands for."""
    return PAPER_TABLE_2[task][2][variant][TABLE_2_SCALES.index(scale)]


def judge(tasks: Sequence[tuple[str, int, Correct, Analyses]]) -> dict[str, dict[str, Any]]:
    """Every claim the runs of ``tasks`` allow, Holm-corrected as one family: ``{claim: entry}`` (the entries
    of :func:`~sparse_tutorial.stats.inference.judge_family`), each name starting with the task's
    short name.

    Args:
        tasks: per task, ``(task, num_classes, correct, analyses)``: the task's name (a key of
            :data:`PAPER_TABLE_2`); 2 for the binary tasks (Figs. 2, 4, 5, term D, the VᵀW penalty), more for
            Fig. 3c; per-document correctness of every trained model (:data:`Correct`); token analyses of
            the analysed models (:data:`Analyses`).
    """
    family: Judged = {}
    for task, num_classes, correct, analyses in tasks:
        short = PAPER_TABLE_2[task][0]
        family.update({f"{short}: {name}": judged for name, judged in
                       {**accuracy_claims(task, correct), **token_claims(task, num_classes, analyses)}.items()})
    return judge_family(family)


def _correctness(per_seed: list[list[float]]) -> np.ndarray:
    """``(seeds, documents, 2)``: each document's value and a weight of 1 (:func:`compare`'s items)."""
    values = np.asarray(per_seed, dtype=float)
    return np.stack([values, np.ones_like(values)], axis=-1)


def accuracy_claims(task: str, correct: Correct) -> Judged:
    """Table 2 (a tiny scale hurts; mean pooling does not; DP-L's LSTM shields it) and §5 (the VᵀW penalty
    brings no accuracy gain), for the models present in ``correct``."""
    dataset = PAPER_TABLE_2[task][1]
    claims: Judged = {}

    def table_model(variant: str, scale: float) -> Model:
        return variant, float(scale), 0.0

    def paper_gap(variant: str, high: float, low: float) -> float:
        return round((paper_accuracy(task, variant, high) - paper_accuracy(task, variant, low)) / 100, 4)

    def compared(name: str, claim: Claim, model: Model, other: Model) -> None:
        if model in correct and other in correct:
            claims[name] = (claim, compare(_correctness(correct[model]), _correctness(correct[other]),
                                           what="accuracy"))

    for variant in PAPER_TABLE_2[task][2]:
        compared(f"scale 0.001 hurts {variant} (accuracy at scale 10 minus 0.001)",
                 Claim(f"Table 2 ({dataset}): {variant} {paper_accuracy(task, variant, 0.001)} % at λ = 0.001, "
                       f"{paper_accuracy(task, variant, 10)} % at λ = 10", paper_effect=paper_gap(variant, 10, 0.001),
                       unit="accuracy"),
                 table_model(variant, 10), table_model(variant, 0.001))
    compared("scale 1 hurts DP (accuracy at scale 10 minus 1)",
             Claim(f"§5: λ = 1 or 0.001 is worse than a larger λ; Table 2 ({dataset}): DP "
                   f"{paper_accuracy(task, 'DP', 1)} % at λ = 1, {paper_accuracy(task, 'DP', 10)} % at λ = 10",
                   paper_effect=paper_gap("DP", 10, 1), unit="accuracy"),
             table_model("DP", 10), table_model("DP", 1))
    for variant in PAPER_TABLE_2[task][2]:
        compared(f"mean pooling (scale 10⁴) does not hurt {variant} (accuracy at scale 10⁴ minus 10)",
                 Claim(f"§5: a very large λ has no significant impact (mean pooling); Table 2 ({dataset}): {variant} "
                       f"{paper_accuracy(task, variant, 10000)} % at λ = 10⁴, {paper_accuracy(task, variant, 10)} % "
                       "at λ = 10", kind="not_less", margin=ACCURACY_MARGIN,
                       paper_effect=paper_gap(variant, 10000, 10), unit="accuracy"),
                 table_model(variant, 10000), table_model(variant, 10))
    shielded = [table_model(variant, scale) for variant in ("DP", "DP-L") for scale in (10, 0.001)]
    if all(model in correct for model in shielded):
        drops = [np.asarray(correct[ten], float) - np.asarray(correct[tiny], float)   # (seeds, documents)
                 for ten, tiny in (shielded[:2], shielded[2:])]
        claims["the LSTM shields DP-L from scale 0.001 (DP's accuracy loss minus DP-L's)"] = (
            Claim(f"Table 2 ({dataset}): at λ = 0.001 DP loses {paper_gap('DP', 10, 0.001):.3f} of accuracy "
                  f"against λ = 10, DP-L {paper_gap('DP-L', 10, 0.001):.3f}",
                  paper_effect=round(paper_gap("DP", 10, 0.001) - paper_gap("DP-L", 10, 0.001), 4), unit="accuracy"),
            compare(_correctness(drops[0].tolist()), _correctness(drops[1].tolist()), score=mean_score,
                    what="accuracy loss"))
    compared("the VᵀW penalty brings no accuracy gain (DP at scale 10, penalised minus not)",
             Claim("§5: with the VᵀW regularizer 'we did not observe a significant improvement in test performance'",
                   kind="not_greater", margin=ACCURACY_MARGIN, unit="accuracy"),
             ("DP", 10.0, 1.0), ("DP", 10.0, 0.0))
    return claims


def token_claims(task: str, num_classes: int, analyses: Analyses) -> Judged:
    """Figs. 2-5 and §5 on the tokens of the analysed models present in ``analyses``."""
    dataset = PAPER_TABLE_2[task][1]
    claims: Judged = {}

    def per_seed(model: Model, token_class: str, score: str) -> list[list[float]]:
        if score == "average_weights":
            return [analysis["average_weights"][token_class] for analysis in analyses[model]]
        return [analysis["classes"][token_class][score] for analysis in analyses[model]]

    def grouped(name: str, paper: str, unit: str, samples: list[list[float]], others: list[list[float]],
                sign: int = 1) -> None:
        claim = Claim(paper, kind="greater" if sign > 0 else "less", unit=unit)
        empty = any(not values for values in samples + others)
        claims[name] = (claim, NotTested("a token class is empty in a seed's test set") if empty
                        else compare_groups(samples, others, what=unit))

    if num_classes != 2:
        model = ("DP", 10.0, 0.0)
        if model in analyses:
            labels = [name for name in analyses[model][0]["classes"] if name != "neutral"]
            polar = [[value for label in labels for value in analysis["classes"][label]["attention"]]
                     for analysis in analyses[model]]
            grouped("DP, scale 10: polarity tokens of every label get larger attention scores than neutral ones",
                    f"Fig. 3c ({dataset}, λ = 10): tokens strongly associated with a label are still likely to "
                    "have larger attention scores than neutral tokens", "attention score", polar,
                    per_seed(model, "neutral", "attention"))
        return claims

    for variant, figure in (("DP", f"Fig. 2 ({dataset}, λ = 10)"), ("AD", "Fig. 4 (additive attention, SST, λ = 10)")):
        model = (variant, 10.0, 0.0)
        if model not in analyses:
            continue
        for score, token_class, sign, says in TOKEN_CLAIMS[:2] if variant == "DP" else TOKEN_CLAIMS:
            grouped(f"{variant}, scale 10: {says}", f"{figure}: {says}", f"{score} score",
                    per_seed(model, token_class, score), per_seed(model, "neutral", score), sign)
        if variant == "DP":   # term D (eq. 27) follows the sign of VᵀW, which differs between seeds
            for side, (pick, says) in enumerate(TERM_D_SIDES):
                chosen = [_by_vtw_sign(analysis)[side] for analysis in analyses[model]]
                grouped(f"DP, scale 10: {says}", f"{figure}: polarity tokens' attention scores above neutral; "
                        f"eq. 27: {pick}", "attention score",
                        [a["classes"][c]["attention"] for a, c in zip(analyses[model], chosen)],
                        per_seed(model, "neutral", "attention"))
    large = ("DP", 100.0, 0.0)
    if large in analyses:
        order = [_by_vtw_sign(analysis) for analysis in analyses[large]]
        grouped("DP, scale 100: the class favoured by the sign of VᵀW gets larger attention scores than the "
                "other (term D)",
                f"§4.2, Fig. 3b ({dataset}, λ = 100): with a large λ and VᵀW ≠ 0 term D pushes positive and "
                "negative tokens' attention scores apart (on SST positive tokens fell below neutral and negative "
                "ones)", "attention score",
                [a["classes"][favoured]["attention"] for a, (favoured, _) in zip(analyses[large], order)],
                [a["classes"][other]["attention"] for a, (_, other) in zip(analyses[large], order)])
    penalised = ("DP", 10.0, 1.0)
    if penalised in analyses:
        for _, token_class, _, says in TOKEN_CLAIMS[2:]:
            grouped(f"DP, scale 10, VᵀW penalty: {says}",
                    "§5: with the VᵀW regularizer both positive and negative tokens get attention scores generally "
                    "larger than the neutral tokens'", "attention score",
                    per_seed(penalised, token_class, "attention"), per_seed(penalised, "neutral", "attention"))
    model = ("DP", 10.0, 0.0)
    if model in analyses:
        for token_class in ("positive", "negative"):
            grouped(f"DP, scale 10: {token_class} tokens' average attention weights above neutral",
                    "Fig. 5: polarity tokens are more likely to have larger attention weights than neutral tokens",
                    "attention weight", per_seed(model, token_class, "average_weights"),
                    per_seed(model, "neutral", "average_weights"))
    return claims
