"""Issues 52 and 63: the scorecard lists every claim of every results file and of every design once, with one
verdict each (the fresh seeds' where a design decided the claim), and each row links to a chapter section that
exists."""
import copy
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

from sparse_tutorial.experiments import load_results
from sparse_tutorial.stats.confirmatory import judge
from sparse_tutorial.stats.design import FAMILIES
from sparse_tutorial.stats.scorecard import COLUMNS, NOT_HERE, SOURCES, book_wide_size, in_words, scorecard, verdict_p
from sparse_tutorial.stats.verdicts import BOOK_VERDICT_ORDER, claim_verdict, verdicts_in_brief

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "book" / "results"


def stored(name):
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rows():
    return scorecard(stored)


def test_the_scorecard_lists_every_stored_and_every_design_claim_once(rows):
    claims = {(name, claim) for name in SOURCES for claim in stored(name)["checks"]["claims"]}
    designs = {name: stored(name)["checks"].get("design") for name in SOURCES}
    designed = {(name, claim) for name, design in designs.items() if design
                for claim in [*(c for family in FAMILIES for c in design["families"][family]), *design["estimation"]]}
    listed = [(row["experiment"], row["claim"]) for row in rows]
    assert len(listed) == len(set(listed)) and set(listed) == claims | designed
    assert all(tuple(row) == COLUMNS for row in rows)
    assert len(designed) == 85 and sum(row["verdict"] == "estimated" for row in rows) == 28   # as the designs hold
    assert ("nmt", "+Entropy from epoch 3 against NMT (ours)") in set(listed) - claims
    order = [row["experiment"] for row in rows]
    assert order == sorted(order, key=list(SOURCES).index)   # experiments in book order


def test_a_claim_a_design_decided_takes_the_fresh_verdict_and_shows_the_pilots_beside(rows):
    by_claim = {(row["experiment"], row["claim"]): row for row in rows}
    for name in SOURCES:
        results = stored(name)
        design = results["checks"].get("design")
        for claim, entry in results["checks"]["claims"].items():
            row = by_claim[name, claim]
            in_design = design is not None and (claim in design["estimation"]
                                                or any(claim in design["families"][f] for f in FAMILIES))
            if not in_design:
                assert (row["verdict"], row["judged_on"], row["pilot"]) == (entry["verdict"], "stored seeds", "")
            else:
                assert row["pilot"] == entry["verdict"]
    entropy = by_claim["nmt", "+Entropy beats NMT (Table I)"]
    assert (entropy["verdict"], entropy["judged_on"], entropy["pilot"]) == ("✗", "fresh seeds", "?")  # issue 63
    for name in SOURCES:
        rows_here = [row["verdict"] for row in rows if row["experiment"] == name]
        assert rows_here == sorted(rows_here, key=BOOK_VERDICT_ORDER.index)


def test_claim_verdict_covers_every_case():
    design = {"families": {"primary": {"a": {"family": "primary", "judged": {"verdict": "✗"}, "not_tested": None}},
                           "secondary": {"b": {"family": "secondary", "judged": None, "not_tested": None},
                                         "f": {"family": "secondary", "judged": None, "not_tested": "at its bound"}}},
              "estimation": {"c": {"family": "estimation"}}}
    pilot = {"verdict": "?"}
    assert [tuple(vars(claim_verdict(pilot, design, claim)).values()) for claim in "abcdf"] == [
        ("✗", "fresh seeds", "?"), ("pending", "pending", "?"), ("estimated", "every seed", "?"),
        ("?", "stored seeds", ""), ("not tested", "fresh seeds", "?")]
    assert claim_verdict(None, design, "a").pilot == ""
    with pytest.raises(KeyError, match="'e'"):
        claim_verdict(None, design, "e")


def test_each_fresh_verdict_shows_its_family_p_and_what_a_book_wide_correction_decides(rows):
    designs = [stored(name)["checks"]["design"] for name in SOURCES if stored(name)["checks"].get("design")]
    size = book_wide_size(designs)
    assert size == 85 - 28
    for name in SOURCES:
        design = stored(name)["checks"].get("design")
        for family in FAMILIES if design else ():
            for claim, entry in design["families"][family].items():
                row = next(row for row in rows if (row["experiment"], row["claim"]) == (name, claim))
                if entry["judged"] is None:
                    assert row["book_wide"] == row["p_adjusted"] == ""
                    continue
                again = judge(entry["kind"], entry["judged"]["differences"], size, entry["margin"])
                assert row["book_wide"] == again.verdict
                p = min(1.0, entry["family_size"] * verdict_p(entry))
                assert (p < 0.05) == (entry["judged"]["verdict"] != "?")   # the family's p agrees with its verdict
                assert row["seeds"] == len(entry["judged"]["differences"])


def test_a_contradiction_says_it_does_not_hold_here_with_the_reason_where_the_setting_departs(rows):
    by_claim = {(row["experiment"], row["claim"]): row for row in rows}
    for key, reason in NOT_HERE.items():
        assert by_claim[key]["verdict"] == "✗", f"{key} is no longer contradicted: drop its reason"
        assert by_claim[key]["in_words"] == f"does not hold here: {reason}"
    assert all(row["in_words"].startswith("does not hold here") for row in rows if row["verdict"] == "✗")
    assert in_words("nmt", "x", "✓") == "holds here" and in_words("nmt", "x", "✗") == "does not hold here"
    lead = by_claim["summarization", "the best abstractive system is on par with Lead-3"]["in_words"]
    assert "synopses" in lead   # issue 63: Lead-3 on one-line synopses


def test_every_row_links_to_a_labelled_claims_section_of_its_chapter():
    for source in SOURCES.values():
        notebook = REPO_ROOT / "book" / f"{source.chapter}.ipynb"
        labels = re.findall(r"^\(([\w-]+)\)=$", "\n".join(cell.source for cell in nbformat.read(notebook, 4).cells
                                                            if cell.cell_type == "markdown"), re.MULTILINE)
        assert source.section in labels, f"{notebook.name} has no section labelled ({source.section})="
        assert source.link() == f"../{source.chapter}.html#{source.section}"


def test_a_missing_results_file_is_named():
    with pytest.raises(FileNotFoundError, match="interpretability"):
        scorecard(lambda name: None if name == "interpretability" else load_results(name))


def test_the_scorecard_page_imports_the_bundle_the_book_serves():
    sys.path.insert(0, str(REPO_ROOT / "book" / "_ext"))
    from interactive_tables import BUNDLE_URL

    page = nbformat.read(REPO_ROOT / "book" / "part4" / "16_scorecard.ipynb", 4)
    assert any(f'"dt_url": "{BUNDLE_URL}"' in cell.source for cell in page.cells if cell.cell_type == "code")


def test_a_judging_page_brief_shows_the_one_verdict_with_the_pilots_beside():
    results = stored("nmt")
    brief = verdicts_in_brief(results["checks"]["claims"], design=results["checks"]["design"])
    row = next(line for line in brief.splitlines() if "+Entropy beats NMT (Table I)" in line)
    assert row.startswith("| ✗ | ? |")          # fresh ✗ as the verdict, the pilot's ? beside it
    assert "estimated" in brief.splitlines()[0] and "pending" not in brief.splitlines()[0]   # every family judged
    waiting = copy.deepcopy(results["checks"]["design"])
    waiting["families"]["secondary"]["+Coverage beats NMT (Table I)"]["judged"] = None   # its fresh seeds missing
    head = verdicts_in_brief(results["checks"]["claims"], design=waiting).splitlines()[0]
    assert "pending 1" in head and "? 11" in head
    assert "| pilot |" not in verdicts_in_brief(results["checks"]["claims"]).splitlines()[2]
