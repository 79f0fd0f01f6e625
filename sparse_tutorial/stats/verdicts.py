"""How a chapter shows the verdicts of :mod:`~sparse_tutorial.stats.inference` (its module docstring
states the rule): the claims in order, contradictions first; a claims table; a compact Markdown table for the
top of a chapter; and the numbers of one claim for a sentence.

Beside each verdict a chapter prints the claim's ``ci_holm``, the interval of the test that made the verdict
at the level Holm's correction applied to it, so that it excludes the null (or lies inside or beyond the
margin) exactly when the verdict says so (:func:`~sparse_tutorial.stats.inference.interval_agrees`);
the bootstrap's unadjusted ``ci95`` describes the spread and is labelled so where it is shown. Beside a
"?" it prints the claim's ``mde``: the smallest difference its seeds could have detected.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparse_tutorial.stats.confirmatory import verdict_from_interval
from sparse_tutorial.stats.design import FAMILIES
from sparse_tutorial.stats.inference import VERDICTS

VERDICT_ORDER = VERDICTS
"""The order in which a chapter lists its claims: contradictions of the paper first, "not tested" last."""

BOOK_VERDICT_ORDER = ("✗", "?", "✓", "pending", "estimated", "not tested")
"""The order of claims by their one verdict (:func:`claim_verdict`), as the scorecard lists them:
contradictions first, open claims, supported, then claims still waiting for fresh seeds, estimated without
a verdict, and not tested."""


def ordered_claims(claims: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """``claims`` as ``(name, entry)`` pairs, contradictions first, then the unresolved, then the supported
    (each group in its stored order)."""
    return sorted(claims.items(), key=lambda item: VERDICT_ORDER.index(item[1]["verdict"]))


def number_text(value: float, spec: str) -> str:
    """``value`` formatted by ``spec``, except that a ``g`` spec writes a number between 1e-4 and 1e6 without
    an exponent (``-130`` rather than ``-1.3e+02`` for ``"+.2g"``), keeping its significant digits."""
    text = f"{value:{spec}}"
    digits = re.fullmatch(r"[+ ]?\.(\d+)g", spec)
    if "e" in text and digits and 1e-4 <= abs(value) < 1e6:
        text = np.format_float_positional(value, precision=int(digits.group(1)), unique=False, fractional=False,
                                          trim="-", sign=spec.startswith("+"))
    return text


def p_text(p: float | None, digits: int = 2) -> str:
    """A p-value as text, rounded once from its unrounded value (``"0.00098"`` for 1/1024 at two digits,
    ``"0.000977"`` at three); ``""`` for a claim without one. Text, so that a table never shows more digits
    than the value was rounded to (a float 0.00098 would print as ``9.800e-04``)."""
    return "" if p is None else number_text(p, f".{digits}g")


def bounds_text(low: float | None, high: float | None, spec: str) -> str:
    """``"[+0.1, +0.7]"``: an interval's ends formatted by ``spec``; an unbounded end (infinite, or ``None`` as
    a results file stores it) is ``−∞``/``+∞``."""
    def end(bound: float | None, infinite: str) -> str:
        return infinite if bound is None or np.isinf(bound) else number_text(bound, spec)
    return f"[{end(low, '−∞')}, {end(high, '+∞')}]"


def interval_text(entry: dict[str, Any], spec: str = "+.2g", scale: float = 1.0) -> str:
    """The interval beside a judged claim's verdict, ``"[+0.1, +0.7]"`` (``ci_holm``; an unbounded side is
    ``−∞``/``+∞``), or ``""`` when the claim was not tested."""
    interval = entry.get("ci_holm")
    if interval is None:
        return ""
    return bounds_text(*(None if bound is None else scale * bound for bound in interval), spec)


def detectable_text(entry: dict[str, Any], spec: str = ".2g", scale: float = 1.0, unit: str = "") -> str:
    """For a "?": what its seeds could have seen, ``"no effect below 0.9 BLEU detectable"`` (from ``mde``,
    the distance from the claim's null detected with 80 % power); ``""`` for every other verdict."""
    if entry["verdict"] != "?" or entry.get("mde") is None:
        return ""
    return f"no effect below {number_text(scale * entry['mde'], spec)}{unit} detectable"


def claims_table(claims: dict[str, dict[str, Any]], digits: int = 3) -> list[dict[str, Any]]:
    """Rows for a chapter's claims table, in :func:`ordered_claims` order: ``{"claim", "verdict", "ours",
    "p", "p_holm", "detectable", "margin", "paper_effect", "paper", "test"}``, where ``ours`` is the
    difference with the interval that made its verdict (``"+0.412 [+0.1, +0.7]"``) and ``detectable``, for
    a "?", the smallest effect its seeds could have seen."""
    rows = []
    for name, entry in ordered_claims(claims):
        effect = entry["effect"]
        ours = "n/a" if effect is None else number_text(effect, f"+.{digits}g")
        if entry.get("ci_holm") is not None:
            ours += " " + interval_text(entry, f"+.{digits}g")
        rows.append({"claim": name, "verdict": entry["verdict"], "ours": ours,
                     "p": p_text(entry["p"]), "p_holm": p_text(entry["p_holm"]),
                     "detectable": (f"≥ {number_text(entry['mde'], '.2g')}" if entry["verdict"] == "?" and entry.get("mde")
                                    is not None else ""),
                     "margin": "none" if entry["margin"] is None else f"±{entry['margin']:g}",
                     "paper_effect": entry["paper_effect"], "paper": entry["paper"],
                     "test": entry.get("test") or entry.get("reason")})
    return rows


def fresh_verdict(entry: dict[str, Any]) -> str | None:
    """A design claim's verdict on its fresh seeds (an entry of a design section's family): the judged one,
    ``"not tested"`` where its precondition failed on them, ``None`` while they are not all stored."""
    if entry["judged"]:
        return entry["judged"]["verdict"]
    return "not tested" if entry["not_tested"] else None


def design_table(section: dict[str, Any], digits: int = 3) -> list[dict[str, Any]]:
    """Rows for a chapter's table of its confirmatory design (a results file's ``checks["design"]``,
    :meth:`~sparse_tutorial.stats.design.Design.section`): the primary family, the secondary, then the
    estimation-only claims, each ``{"family", "claim", "verdict", "ours", "p", "power", "detectable",
    "fresh seeds"}``. A judged claim's ``ours`` is the Hodges–Lehmann estimate over its fresh seeds with the
    interval of the test that made its verdict, at its family's level; ``detectable`` is the smallest effect
    the design could see (its MDE at 80 % power); a claim whose fresh seeds are not all stored yet is
    ``pending``, one whose precondition failed on them ``not tested`` (``ours``: ``n/a``, as in
    :func:`claims_table`). An estimation-only claim has no verdict: its mean over every seed (pilot and fresh) with
    the 95 % t-interval."""
    spec = f"+.{digits}g"

    def interval(bounds: Any) -> str:
        return "" if bounds is None else " " + bounds_text(*bounds, spec)

    rows = []
    for family in FAMILIES:
        for name, entry in section["families"][family].items():
            judged = entry["judged"]
            fresh = min(len(seeds) for seeds in entry["fresh_seeds"].values())
            rows.append({"family": family, "claim": name,
                         "verdict": fresh_verdict(entry) or f"pending ({fresh}/{len(section['fresh_seeds'])} fresh seeds)",
                         "ours": number_text(judged["estimate"], spec) + interval(judged["interval"]) if judged
                         else "n/a" if entry["not_tested"] else "",
                         "p": "" if judged is None else p_text(judged["p"], 3),
                         "power": round(entry["power"], 2),
                         "detectable": "" if entry["not_tested"] else f"≥ {number_text(entry['mde'], '.2g')}",
                         "fresh seeds": fresh})
    for name, entry in section["estimation"].items():
        rows.append({"family": "estimation", "claim": name, "verdict": "—",
                     "ours": "" if entry["mean"] is None
                     else number_text(entry["mean"], spec) + interval(entry["ci95"]),
                     "p": "", "power": None, "detectable": "", "fresh seeds": len(
                         [seed for seed in entry["seeds"] if seed in section["fresh_seeds"]])})
    return rows


def design_agrees(section: dict[str, Any]) -> bool:
    """Whether every verdict of a results file's design section (``checks["design"]``) is the one its
    interval gives (:func:`~sparse_tutorial.stats.confirmatory.verdict_from_interval`) and rests on all of
    the design's fresh seeds, no more and no fewer."""
    for family in FAMILIES:
        for entry in section["families"][family].values():
            judged = entry["judged"]
            if judged is None:
                continue
            if len(judged["differences"]) != len(section["fresh_seeds"]):
                return False
            low, high = judged["interval"]   # an unbounded end may be stored as null
            bounds = (-np.inf if low is None else low, np.inf if high is None else high)
            if judged["verdict"] != verdict_from_interval(entry["kind"], bounds, entry["margin"]):
                return False
    return True


def design_summary(section: dict[str, Any], pilot_claims: dict[str, dict[str, Any]]) -> str:
    """Markdown lines on a design section: per family the count of each verdict on the fresh seeds ("not
    tested" where a claim's precondition failed on them) and of the claims still pending, then every claim
    whose fresh verdict differs from the pilot's (its entry in ``pilot_claims``, the results file's
    ``checks["claims"]``), contradictions of the paper first."""
    lines = []
    changed = []
    for family in FAMILIES:
        entries = section["families"][family]
        fresh = {name: verdict for name, entry in entries.items() if (verdict := fresh_verdict(entry))}
        verdicts = list(fresh.values())
        counts = ", ".join(f"{verdicts.count(mark)} {mark}" for mark in ("✗", "✓", "?", "not tested") if mark in verdicts)
        pending = len(entries) - len(fresh)
        claims = f"{len(entries)} claim{'' if len(entries) == 1 else 's'}"
        lines.append(f"- **{family}** ({claims}): " + (counts or "none judged yet")
                     + (f", {pending} pending" if pending and fresh else ""))
        changed += [(verdict, name) for name, verdict in fresh.items()
                    if name in pilot_claims and verdict != pilot_claims[name]["verdict"]]
    order = {mark: rank for rank, mark in enumerate(VERDICT_ORDER)}
    lines += [f"- *{markdown_escaped(name)}*: {pilot_claims[name]['verdict']} on the pilot's seeds, {fresh} on the "
              "fresh ones" for fresh, name in sorted(changed, key=lambda pair: order[pair[0]])]
    return "\n".join(lines)


def design_in_brief(section: dict[str, Any], digits: int = 3) -> str:
    """A Markdown table of what a confirmatory design decided, for the top of a chapter: a line of counts
    over the judged claims, then one row per claim of :func:`design_table` (its judged claims
    contradictions first, then pending ones, then the estimates)."""
    rows = design_table(section, digits)
    judged = [row for row in rows if row["verdict"] in VERDICT_ORDER]
    first, last = section["fresh_seeds"][0], section["fresh_seeds"][-1]
    counts = " · ".join(f"{mark} {sum(row['verdict'] == mark for row in judged)}"
                        for mark in ("✗", "✓", "?", "not tested") if any(row["verdict"] == mark for row in judged))
    estimated = sum(row["family"] == "estimation" for row in rows)
    decided = f"{counts}** of {len(judged)} judged claims (" if judged else "nothing yet** ("
    head = (f"**Decided on fresh seeds {first}–{last}: {decided}{len(rows) - len(judged) - estimated} pending, "
            f"{estimated} estimated without a verdict). Beside a"
            " verdict, the Hodges–Lehmann estimate over the fresh seeds and the interval of the signed-rank test that"
            " made it, at its family's level; beside an estimate, the mean over every seed and its 95 % t-interval;"
            " *detectable*: the smallest effect the design detects with 80 % power")
    order = {mark: rank for rank, mark in enumerate(VERDICT_ORDER)}
    rows = sorted(rows, key=lambda row: (row["family"] == "estimation", order.get(row["verdict"], len(order))))
    brief = [{"verdict": row["verdict"], "claim": markdown_escaped(row["claim"]), "family": row["family"],
              "ours [interval]": row["ours"] or "—", "detectable": row["detectable"] or "—"} for row in rows]
    return head + "\n\n" + markdown_table(brief, "c")


def markdown_escaped(text: Any) -> str:
    """Plain ``text`` for Markdown: ``<`` escaped, so that ``<unk>`` is not read as an HTML tag."""
    return str(text).replace("<", "\\<")


def markdown_table(rows: list[dict[str, Any]], align: str = "") -> str:
    """``rows`` (dicts with the same keys, the columns) as a Markdown table; ``align`` one of ``l``, ``c``,
    ``r`` per column (left by default). Cells are Markdown (plain text goes through :func:`markdown_escaped`
    first); a ``|`` inside one is escaped."""
    if not rows:
        return ""
    columns = list(rows[0])
    marks = {"l": ":--", "c": ":-:", "r": "--:"}
    lines = ["| " + " | ".join(columns) + " |",
             "|" + "|".join(marks[align[k]] if k < len(align) else ":--" for k in range(len(columns))) + "|"]
    lines += ["| " + " | ".join(str(row[column]).replace("|", "\\|") for column in columns) + " |" for row in rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class ClaimVerdict:
    """A claim's one verdict and what it rests on.

    Attributes:
        verdict: ``"✓"``, ``"✗"`` or ``"?"``, ``"pending"`` (a design's claim whose fresh seeds are not all
            stored), ``"estimated"`` (a design estimates it without a verdict) or ``"not tested"``.
        judged_on: ``"fresh seeds"``, ``"stored seeds"`` (no design covers the claim), ``"every seed"`` (an
            estimate) or ``"pending"``.
        pilot: the stored seeds' verdict of a claim a design covers, ``""`` otherwise.
    """

    verdict: str
    judged_on: str
    pilot: str


def design_entry(design: dict[str, Any] | None, claim: str) -> dict[str, Any] | None:
    """``claim``'s entry in a results file's design section (a family's or the estimates'), or ``None``."""
    if design is None:
        return None
    for family in FAMILIES:
        if claim in design["families"][family]:
            return design["families"][family][claim]
    return design["estimation"].get(claim)


def claim_verdict(stored: dict[str, Any] | None, design: dict[str, Any] | None, claim: str) -> ClaimVerdict:
    """The one verdict of ``claim``, from its stored-seed entry (``checks["claims"][claim]`` or ``None``) and
    its results file's design section (``checks["design"]`` or ``None``).

    Raises:
        KeyError: neither the stored claims nor the design hold ``claim``.
    """
    entry = design_entry(design, claim)
    if entry is None:
        if stored is None:
            raise KeyError(f"no stored claim and no design claim named {claim!r}")
        return ClaimVerdict(stored["verdict"], "stored seeds", "")
    pilot = "" if stored is None else stored["verdict"]
    if entry["family"] == "estimation":
        return ClaimVerdict("estimated", "every seed", pilot)
    verdict = fresh_verdict(entry)
    return ClaimVerdict("pending", "pending", pilot) if verdict is None else ClaimVerdict(verdict, "fresh seeds", pilot)


def verdicts_in_brief(claims: dict[str, dict[str, Any]], digits: int = 3, design: dict[str, Any] | None = None) -> str:
    """A Markdown table for the top of a chapter, one row per claim: the verdict, the claim, ours with the
    interval that made the verdict (for a "?", also the smallest effect its seeds could have seen) and the
    paper's effect where it states one; a line of counts above it.

    With the results file's ``design`` section, the verdict is each claim's one verdict
    (:func:`claim_verdict`: the fresh seeds' where the design decided the claim, ``pending`` or ``estimated``
    where it has not), the stored seeds' verdict moves to a column *pilot*, and the rows follow
    :data:`BOOK_VERDICT_ORDER`; without it, the rows are :func:`ordered_claims`'s."""
    rows = claims_table(claims, digits)
    verdict = {row["claim"]: claim_verdict(claims[row["claim"]], design, row["claim"]) for row in rows}
    rows.sort(key=lambda row: BOOK_VERDICT_ORDER.index(verdict[row["claim"]].verdict))
    ours = f"ours{' on the stored seeds' if design is not None else ''} [interval at Holm's level]"
    brief = [{"verdict": verdict[row["claim"]].verdict,
              **({"pilot": verdict[row["claim"]].pilot or "—"} if design is not None else {}),
              "claim": markdown_escaped(row["claim"]),
              ours: row["ours"] + (f"; detectable {row['detectable']}" if row["detectable"] else ""),
              "paper": ("—" if row["paper_effect"] is None or row["paper_effect"] != row["paper_effect"]
                        else number_text(row["paper_effect"], f"+.{digits}g"))} for row in rows]
    shown = [mark for mark in BOOK_VERDICT_ORDER
             if mark in ("✗", "?", "✓") or any(row["verdict"] == mark for row in brief)]
    counts = " · ".join(f"{mark} {sum(row['verdict'] == mark for row in brief)}" for mark in shown)
    head = f"**{counts}** of {len(rows)} claims"
    if design is not None:
        head += (" (a claim the design decided takes its fresh seeds' verdict, and *pilot* is the verdict of the "
                 "seeds whose numbers this table shows)")
    return head + ("\n\n" + markdown_table(brief, "c" * (2 if design is not None else 1) + "l") if brief else "")


def described_claim(entry: dict[str, Any], scale: float = 1.0, spec: str = "+.2f", unit: str = "", label: str = "",
                    with_verdict: bool = True) -> str:
    """A judged claim's numbers for a sentence of a chapter, e.g. ``"✓ (τ-b = +0.68, interval at Holm's level
    [+0.50, +0.83], p = 6.6e-06, 0.0003 after Holm)"``: ``label``, the difference times ``scale`` formatted
    by ``spec`` with ``unit``, the interval that made the verdict, p and Holm's p, and for a "?" the smallest
    effect its seeds could have detected. Without the verdict: ``"+1.5 points (interval ...)"``."""
    details = []
    if entry.get("ci_holm") is not None:
        details.append(f"interval at Holm's level {interval_text(entry, spec, scale)}")
    details.append("p n/a" if entry["p"] is None else f"p = {entry['p']:.2g}"
                   + (f", {entry['p_holm']:.2g} after Holm" if entry.get("p_holm") is not None else ""))
    detectable = detectable_text(entry, spec.lstrip("+"), scale, unit)
    if detectable:
        details.append(detectable)
    value = f"{label}{number_text(scale * entry['effect'], spec)}{unit}"
    return f"{entry['verdict']} ({value}, {', '.join(details)})" if with_verdict else f"{value} ({', '.join(details)})"


@dataclass(frozen=True)
class ClaimEvidence:
    """What a figure of a claim family shows of one claim: every seed's difference ``a − b``, the interval of
    the test that made the verdict with the estimate it brackets, the paper's effect where it states one, and
    the margin of an "on par" or "no better" claim (:func:`~sparse_tutorial.plotting.claim_family_plot`)."""

    claim: str
    verdict: str
    differences: tuple[float, ...]
    estimate: float | None
    interval: tuple[float, float] | None
    paper: float | None = None
    margin: float | None = None


def _finite_bounds(bounds: Any) -> tuple[float, float] | None:
    """An interval as a results file stores it (``None`` for an unbounded end) with its ends as floats."""
    if bounds is None:
        return None
    low, high = bounds
    return (-np.inf if low is None else float(low), np.inf if high is None else float(high))


def design_evidence(section: dict[str, Any], family: str, paper_effects: dict[str, float | None] | None = None
                    ) -> list[ClaimEvidence]:
    """The judged claims of ``family`` in a design section, each with its fresh seeds' differences, the
    Hodges–Lehmann estimate and interval of its signed-rank test, and ``paper_effects[claim]`` when given."""
    rows = []
    for name, entry in section["families"][family].items():
        judged = entry["judged"]
        if judged is not None:
            rows.append(ClaimEvidence(name, judged["verdict"], tuple(judged["differences"]), judged["estimate"],
                                      _finite_bounds(judged["interval"]), (paper_effects or {}).get(name),
                                      entry["margin"]))
    return rows


def pilot_evidence(claims: dict[str, dict[str, Any]]) -> list[ClaimEvidence]:
    """The judged claims of a results file's ``checks["claims"]``, each with its seeds' differences (the
    means per seed, ``seed_level``), its effect, the interval at Holm's level that made its verdict
    (``ci_holm``) and the paper's effect."""
    return [ClaimEvidence(name, entry["verdict"], tuple(np.subtract(entry["seed_level"]["a"], entry["seed_level"]["b"])),
                          entry["effect"], _finite_bounds(entry["ci_holm"]), entry.get("paper_effect"),
                          entry.get("margin"))
            for name, entry in ordered_claims(claims) if entry["verdict"] != "not tested" and entry.get("seed_level")]
