"""Every claim the book judges, in one table: the scorecard page and the closing chapter read it.

Each experiment's results file (``book/results/NAME.json``) stores its claims with their verdicts
(:mod:`~sparse_tutorial.stats.inference`); :func:`scorecard` puts them side by side, one row per claim, with
the paper it comes from and the chapter section that judges it (:data:`SOURCES`). The rows are
:func:`~sparse_tutorial.stats.verdicts.claims_table`'s, so the scorecard shows each claim exactly as its
chapter does, and it is made from the same files, so the two cannot disagree. Beside the verdict of the
stored seeds, each row shows what the experiment's confirmatory design says of the claim on its fresh seeds
(:func:`confirmatory_verdict`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from sparse_tutorial.stats.design import FAMILIES
from sparse_tutorial.stats.verdicts import claims_table


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

COLUMNS = ("experiment", "paper", "where", "claim", "paper_effect", "ours", "seeds", "verdict", "confirmatory",
           "p_holm", "detectable", "chapter")
"""The scorecard's columns: ``where`` is the table or figure (the stored ``paper`` text up to its colon);
``ours`` the effect with the interval that made its verdict; ``seeds`` the fewest seeds of an arm;
``confirmatory`` the design's word on the claim (:func:`confirmatory_verdict`);
``detectable``, for a "?", the smallest effect its seeds could have seen; ``chapter`` the link of
:meth:`Source.link`."""


def confirmatory_verdict(design: dict[str, Any] | None, claim: str) -> str:
    """What a results file's confirmatory design (``checks["design"]``,
    :meth:`~sparse_tutorial.stats.design.Design.section`) says of ``claim``: its verdict on the fresh seeds
    (``"✓"``, ``"✗"`` or ``"?"``), ``"pending"`` until all of them are stored, ``"estimated"`` for an
    estimation-only claim, and ``""`` when the file has no design or the design leaves the claim out."""
    if design is None:
        return ""
    for family in FAMILIES:
        if claim in design["families"][family]:
            judged = design["families"][family][claim]["judged"]
            return "pending" if judged is None else judged["verdict"]
    return "estimated" if claim in design["estimation"] else ""


def scorecard(load: Callable[[str], dict[str, Any] | None]) -> list[dict[str, Any]]:
    """One row per claim of every experiment of :data:`SOURCES` (:data:`COLUMNS`), experiments in book order
    and, within one, contradictions first (:func:`~sparse_tutorial.stats.verdicts.ordered_claims`).

    Args:
        load: the results of an experiment by name, e.g. :func:`~sparse_tutorial.runs.runner.load_results`.

    Raises:
        FileNotFoundError: an experiment of :data:`SOURCES` has no results.
    """
    rows = []
    for experiment, source in SOURCES.items():
        results = load(experiment)
        if results is None:
            raise FileNotFoundError(f"no stored results of experiment {experiment!r} (book/results/{experiment}.json)")
        claims = results["checks"]["claims"]
        for row in claims_table(claims):
            entry = claims[row["claim"]]
            rows.append({"experiment": experiment, "paper": source.paper,
                         "where": entry["paper"].split(":", 1)[0], "claim": row["claim"],
                         "paper_effect": row["paper_effect"], "ours": row["ours"],
                         "seeds": min(entry["seeds"]) if entry.get("seeds") else None,
                         "verdict": row["verdict"],
                         "confirmatory": confirmatory_verdict(results["checks"].get("design"), row["claim"]),
                         "p_holm": row["p_holm"], "detectable": row["detectable"],
                         "chapter": source.link()})
    return rows

