"""Issue 32: one symbol, one meaning. The introduction's notation table is the authority; every chapter
points to it, and the symbols it retires (a paper's own letters) appear in a chapter's math only in a
paragraph that says what the paper writes."""
import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
CHAPTERS = sorted(BOOK.glob("part*/*.ipynb"))
MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)

RETIRED = {
    r"T_x|T_y": "source and target lengths are n and m",
    r"(?<![\\a-zA-Z])z_\{?[it]\b|(?<![\\a-zA-Z])z_i\^": "the decoder state is s_i",
    r"(?<![\\a-zA-Z])c\^\{?t|(?<![\\a-zA-Z])c_\{ij\}|(?<![\\a-zA-Z])c_\{i,\s*j\}": "coverage is C_ij (c_i is the context)",
    r"\\pi_j": "a projection's output is p",
    r"\\operatorname\{Ent\}": "entropy is H",
}
"""Patterns of retired symbols, and what the book writes instead."""
OWN_LAMBDA = {"06_sparsemax": "g", "07_sparsegen_entmax": "g", "12_attention_text_classification": "s",
              "13_sparse_interpretability": "g"}
"""Chapters whose λ is not a penalty weight: every λ in their math carries this subscript."""


def paragraphs(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    text = "\n\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    return re.split(r"\n\s*\n", text)


def offences(path: Path) -> list[str]:
    """Math fragments of ``path``'s markdown that use a retired symbol outside a paragraph saying what a
    paper writes."""
    found = []
    own = OWN_LAMBDA.get(path.stem)
    for paragraph in paragraphs(path):
        if "write" in paragraph:
            continue
        for match in MATH.finditer(paragraph):
            math = match.group(1) or match.group(2)
            found += [f"{math.strip()[:60]!r}: {why}" for pattern, why in RETIRED.items() if re.search(pattern, math)]
            if own and re.search(rf"\\lambda(?!_{own}|_\{{{own}\}})", math):
                found.append(f"{math.strip()[:60]!r}: this chapter's λ is λ_{own}")
            if path.stem == "13_sparse_interpretability" and re.search(r"\\tau(?!_b)", math):
                found.append(f"{math.strip()[:60]!r}: Kendall's τ is τ_b")
    return found


def test_the_introduction_has_the_notation_table():
    intro = (BOOK / "intro.md").read_text(encoding="utf-8")
    assert "(notation)=\n## Notation" in intro
    table = intro.split("## Notation", 1)[1]
    for symbol in ("$s_i$", "$C_{ij}$", "$\\lambda_g$", "$\\lambda_s$", "$\\tau_b$", "$T$", "$n$, $j"):
        assert symbol in table, symbol


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_each_chapter_points_to_the_notation_and_uses_it(path):
    text = "\n".join(paragraphs(path))
    assert "{ref}`notation <notation>`" in text, f"{path.name}: no pointer to the notation table"
    assert not offences(path), f"{path.name}: " + "; ".join(offences(path))


def test_a_retired_symbol_is_found_and_a_paper_quote_is_allowed(tmp_path):
    chapter = tmp_path / "06_sparsemax.ipynb"
    cells = [{"cell_type": "markdown", "source": ["The state $z_i$ and $\\lambda = 0.5$.\n"]},
             {"cell_type": "markdown", "source": ["Laha et al. write $\\lambda$ for our $\\lambda_g$.\n"]}]
    chapter.write_text(json.dumps({"cells": cells}))
    assert [o.split(": ")[1] for o in offences(chapter)] == ["the decoder state is s_i", "this chapter's λ is λ_g"]
