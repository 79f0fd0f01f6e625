"""Issue 52: the scorecard lists every claim of every results file, exactly as the files judge it, and each
row links to a chapter section that exists."""
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

from sparse_tutorial.experiments import load_results
from sparse_tutorial.stats.scorecard import COLUMNS, SOURCES, confirmatory_verdict, scorecard

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "book" / "results"


def test_the_scorecard_lists_every_stored_claim_once_with_its_verdict():
    rows = scorecard(lambda name: json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8")))
    stored = {(name, claim): entry["verdict"] for name in SOURCES
              for claim, entry in json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))["checks"]["claims"].items()}
    assert len(rows) == len(stored) and all(tuple(row) == COLUMNS for row in rows)
    assert {(row["experiment"], row["claim"]): row["verdict"] for row in rows} == stored
    order = [row["experiment"] for row in rows]
    assert order == sorted(order, key=list(SOURCES).index)   # experiments in book order


def test_each_row_says_what_its_design_decided_on_fresh_seeds():
    design = {"families": {"primary": {"a": {"judged": {"verdict": "✗"}}}, "secondary": {"b": {"judged": None}}},
              "estimation": {"c": {}}}
    assert [confirmatory_verdict(design, claim) for claim in "abcd"] == ["✗", "pending", "estimated", ""]
    assert confirmatory_verdict(None, "a") == ""
    rows = {(row["experiment"], row["claim"]): row["confirmatory"] for row in scorecard(load_results)}
    explanation = load_results("explanation")["checks"]["design"]
    for family in ("primary", "secondary"):
        for claim, entry in explanation["families"][family].items():
            assert rows["explanation", claim] == (entry["judged"]["verdict"] if entry["judged"] else "pending")
    assert {rows["explanation", claim] for claim in explanation["estimation"]} == {"estimated"}


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
