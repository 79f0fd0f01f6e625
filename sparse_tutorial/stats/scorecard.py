"""Every claim the book states, in one table with one verdict each: the scorecard page and the closing chapter
read it.

Each experiment's results file (``book/results/NAME.json``) stores its claims with the verdicts of its stored
seeds (:mod:`~sparse_tutorial.stats.inference`) and, where the chapter has one, its confirmatory design
(``checks["design"]``, :mod:`~sparse_tutorial.stats.design`), committed before the fresh seeds that judge it.
:func:`scorecard` gives **one verdict per claim** (:func:`~sparse_tutorial.stats.verdicts.claim_verdict`):
where a design decided the claim on its fresh seeds, that verdict, with the pilot's beside it as the
pilot's; where the design has not decided it yet, ``pending``; where it only estimates it, ``estimated``;
and for a claim outside every design, the verdict of the stored seeds. A claim that only a design states
(``"+Entropy from epoch 3 against NMT (ours)"``) is a row too. Each family controls its own familywise error
rate; :data:`BOOK_WIDE` says what one correction over every designed claim of the book would decide instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy import stats

from sparse_tutorial.stats.confirmatory import judge
from sparse_tutorial.stats.design import FAMILIES
from sparse_tutorial.stats.verdicts import (BOOK_VERDICT_ORDER, claim_verdict, claims_table, design_entry,
                                            design_table, number_text, p_text)


@dataclass(frozen=True)
class Source:
    """Where an experiment's claims come from and where the book judges them.

    Attributes:
        paper: the paper (or papers) whose claims the experiment tests, as the book cites them.
        chapter: the judging chapter's document, relative to ``book/`` without suffix
            (``"part2/10_sparse_nmt"``).
        section: the MyST label of the chapter's claims section (its HTML anchor).
    """

    paper: str
    chapter: str
    section: str

    def link(self) -> str:
        """The URL of the claims section in the built book, from a page in another folder of ``book/``."""
        return f"../{self.chapter}.html#{self.section}"


SOURCES: dict[str, Source] = {
    "nmt": Source("Zhang et al. (2019)", "part2/10_sparse_nmt", "sparse-nmt-claims"),
    "alignment": Source("Zhang et al. (2019)", "part2/10_sparse_nmt", "sparse-nmt-claims"),
    "summarization": Source("Zhang et al. (2019)", "part2/11_summarization", "summarization-claims"),
    "classification": Source("Sun & Lu (2020)", "part3/12_attention_text_classification", "classification-claims"),
    "interpretability": Source("Meister et al. (2021)", "part3/13_sparse_interpretability",
                               "interpretability-claims"),
    "explanation": Source("Serrano & Smith; Jain & Wallace; Wiegreffe & Pinter (2019)",
                          "part3/14_attention_as_explanation", "explanation-claims"),
}
"""Each experiment with claims: its paper and the chapter section that judges them, in book order."""

_ONE_WORD = ("on our small Bible corpus the penalty collapsed every aligner's attention onto one word, where the "
             "paper aligns Chinese→English news")
_ONE_SENTENCE = ("our Rotten Tomatoes items are single sentences, where the paper's Fig. 3 measures IMDb reviews of "
                 "hundreds of words, and a sparser attention passes gradient to fewer states")
NOT_HERE: dict[tuple[str, str], str] = {
    ("nmt", "+Entropy beats NMT (Table I)"):
        "trained from the first step on our small German→English Bible corpus, the penalty parks the attention "
        "on one source piece in some trainings, where the paper trains on Chinese→English news",
    ("alignment", "+Entropy lowers AER (Table III)"): _ONE_WORD,
    ("alignment", "+Entropy lowers AER below +Coverage (Table III)"): _ONE_WORD,
    ("summarization", "the best abstractive system is on par with Lead-3"):
        "our references are one-line package synopses, which three lead sentences overshoot, where the paper "
        "summarises news, whose lead is a strong summary",
    ("summarization", "the best abstractive system is on par with Lead-1"):
        "the claim is our own analogue of the paper's Lead-3 for one-line synopses, and the abstractive systems "
        "beat even one lead sentence",
    ("interpretability", "Fig. 3, BiLSTM, rotten_tomatoes: attention agrees less with gradient importance as λ grows"):
        _ONE_SENTENCE,
    ("interpretability", "Fig. 3, BiLSTM, rotten_tomatoes: attention agrees less with gradient importance as λ grows "
                         "(τ over the positions attention keeps)"): _ONE_SENTENCE,
    ("interpretability", "Fig. 3, BiLSTM, newsgroups:hockey-vs-baseball: attention agrees less with leave-one-out "
                         "importance as λ grows (τ over the positions attention keeps)"):
        "our long documents are 20 Newsgroups hockey and baseball posts read by a small one-layer BiLSTM, where the "
        "paper's Fig. 3 measures IMDb reviews",
    ("explanation", "without an encoder, the base model's frozen attention beats uniform attention"):
        "our short sentiment sentences need no attention at all, and the base model's weights score a BiLSTM's "
        "context-laden states, not the single words the encoder-free model sees",
}
"""For a claim our runs contradict where our setting departs from the paper's: the departure, written to
follow "does not hold here: " (:func:`in_words`). Chapter 15 and the scorecard print it; a test checks that
every entry is a claim whose verdict is ✗."""

BOOK_WIDE = ("Bonferroni over every claim in the primary and secondary families of every design, the same "
             "exact signed-rank test and interval as each family's")
"""The book-wide correction shown beside each verdict decided on fresh seeds (column ``book_wide``)."""

COLUMNS = ("experiment", "paper", "where", "claim", "says", "verdict", "judged_on", "ours", "seeds", "p_adjusted",
           "detectable", "pilot", "book_wide", "in_words", "paper_effect", "chapter")
"""The scorecard's columns: ``where`` is the table or figure (the stored ``paper`` text up to its colon, or
``"ours"``); ``says`` what the paper says, in its words where the stored text quotes them (after the colon);
``verdict`` the claim's one verdict (:func:`~sparse_tutorial.stats.verdicts.claim_verdict`) and ``judged_on``
what it rests on;
``ours`` the effect with the interval that made the verdict (for an estimate, the mean over every seed with
its 95 % t-interval); ``seeds`` the seeds behind it (the fewest of an arm); ``p_adjusted`` the p after the
family's correction (Bonferroni's over the design's family on fresh seeds, Holm's on stored seeds);
``detectable``, for a "?", the smallest effect its seeds could have seen; ``pilot`` the stored seeds' verdict
of a claim a design covers; ``book_wide`` the verdict under :data:`BOOK_WIDE`; ``in_words`` the verdict as a
sentence (:func:`in_words`); ``chapter`` the link of :meth:`Source.link`."""


def book_wide_size(designs: list[dict[str, Any]]) -> int:
    """How many claims :data:`BOOK_WIDE` corrects over: every primary and secondary claim of ``designs``."""
    return sum(len(design["families"][family]) for design in designs for family in FAMILIES)


def in_words(experiment: str, claim: str, verdict: str) -> str:
    """The verdict as the start of a sentence: ``"holds here"``, ``"does not hold here"`` (followed by the
    departure of :data:`NOT_HERE` where our setting differs from the paper's), ``"undecided here"``,
    ``"waits for its fresh seeds"``, ``"estimated, without a verdict"`` or ``"not tested"``."""
    if verdict == "✗":
        reason = NOT_HERE.get((experiment, claim))
        return "does not hold here" + (f": {reason}" if reason else "")
    return {"✓": "holds here", "?": "undecided here", "pending": "waits for its fresh seeds",
            "estimated": "estimated, without a verdict", "not tested": "not tested"}[verdict]


def _design_numbers(entry: dict[str, Any], ours: str, book_wide: int) -> dict[str, Any]:
    """``ours`` (the design table's, :func:`~sparse_tutorial.stats.verdicts.design_table`), ``seeds``,
    ``p_adjusted``, ``detectable`` and ``book_wide`` of a design's claim."""
    if entry["family"] == "estimation":
        return {"ours": ours, "seeds": len(entry["seeds"]), "p_adjusted": "", "detectable": "", "book_wide": ""}
    judged = entry["judged"]
    if judged is None:
        return {"ours": ours, "seeds": None, "p_adjusted": "", "detectable": "", "book_wide": ""}
    return {"ours": ours, "seeds": len(judged["differences"]),
            "p_adjusted": p_text(min(1.0, entry["family_size"] * verdict_p(entry))),
            "detectable": f"≥ {number_text(entry['mde'], '.2g')}" if judged["verdict"] == "?" else "",
            "book_wide": judge(entry["kind"], judged["differences"], book_wide, entry["margin"]).verdict}


def verdict_p(entry: dict[str, Any]) -> float:
    """The exact signed-rank p of the test behind a judged design claim's verdict: the stored ``p`` (the test
    that supports the claim), except for a margin claim our seeds contradict, whose p is that of a shift beyond
    the margin on the side the claim rules out (the test whose rejection put the interval there)."""
    judged = entry["judged"]
    if judged["verdict"] != "✗" or entry["kind"] in ("greater", "less"):
        return judged["p"]
    differences, delta = np.asarray(judged["differences"], dtype=float), entry["margin"] or 0.0
    if judged["estimate"] > 0:
        return float(stats.wilcoxon(differences - delta, alternative="greater", method="exact").pvalue)
    return float(stats.wilcoxon(differences + delta, alternative="less", method="exact").pvalue)


def scorecard(load: Callable[[str], dict[str, Any] | None], digits: int = 3) -> list[dict[str, Any]]:
    """One row per claim (:data:`COLUMNS`): every claim of every experiment of :data:`SOURCES` and every claim
    of their designs, experiments in book order and, within one, in
    :data:`~sparse_tutorial.stats.verdicts.BOOK_VERDICT_ORDER`.

    Args:
        load: the results of an experiment by name, e.g. :func:`~sparse_tutorial.runs.runner.load_results`.
        digits: significant digits of the effects and interval ends.

    Raises:
        FileNotFoundError: an experiment of :data:`SOURCES` has no results.
    """
    results = {}
    for experiment in SOURCES:
        results[experiment] = load(experiment)
        if results[experiment] is None:
            raise FileNotFoundError(f"no stored results of experiment {experiment!r} (book/results/{experiment}.json)")
    designs = [stored["checks"]["design"] for stored in results.values() if stored["checks"].get("design")]
    book_wide = book_wide_size(designs)
    rows = []
    for experiment, source in SOURCES.items():
        claims, design = results[experiment]["checks"]["claims"], results[experiment]["checks"].get("design")
        stored_rows = {row["claim"]: row for row in claims_table(claims, digits)}
        design_ours = {row["claim"]: row["ours"] for row in design_table(design, digits)} if design else {}
        names = list(stored_rows) + [name for name in _design_claims(design) if name not in stored_rows]
        found = []
        for name in names:
            verdict = claim_verdict(claims.get(name), design, name)
            entry = design_entry(design, name)
            stored = stored_rows.get(name)
            numbers = (_design_numbers(entry, design_ours[name], book_wide) if entry is not None else
                       {"ours": stored["ours"], "p_adjusted": stored["p_holm"], "detectable": stored["detectable"],
                        "seeds": min(claims[name]["seeds"]) if claims[name].get("seeds") else None, "book_wide": ""})
            where, _, says = claims[name]["paper"].partition(":") if name in claims else ("ours", "", "")
            found.append({"experiment": experiment, "paper": source.paper, "where": where, "claim": name,
                          "says": says.strip(),
                          "verdict": verdict.verdict, "judged_on": verdict.judged_on, **numbers,
                          "pilot": verdict.pilot, "in_words": in_words(experiment, name, verdict.verdict),
                          "paper_effect": stored["paper_effect"] if stored else None, "chapter": source.link()})
        rows += sorted(found, key=lambda row: BOOK_VERDICT_ORDER.index(row["verdict"]))
    return [{column: row[column] for column in COLUMNS} for row in rows]


def _design_claims(design: dict[str, Any] | None) -> list[str]:
    """Every claim of a design section: its families' in order, then its estimates."""
    if design is None:
        return []
    return [name for family in FAMILIES for name in design["families"][family]] + list(design["estimation"])
