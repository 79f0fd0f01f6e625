"""Issue 32: Part I's "Predict, then turn a knob" sections ask the reader to set a parameter and re-run the
chapter, and promise that a claim failing away from the defaults only warns (``ClaimWarning``). Each chapter
is executed here once with every value its section suggests (``Set `NAME = value```), so a suggestion that
crashes the chapter, or an ``assert`` a knob can break, fails this test. The kernel runs without ``CI`` in
its environment, as a reader's does (under ``CI`` every claim is strict, knobs or not).

The knobs of one chapter are turned together (one execution per chapter keeps the suite short); a crash
that one knob alone would cause still shows.
"""
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

PART_ONE = Path(__file__).resolve().parent.parent / "book" / "part1"
SUGGESTION = re.compile(r"Set `([A-Z][A-Z0-9_]*) = ([^`]+)`")


def suggestions(notebook: nbformat.NotebookNode) -> dict[str, str]:
    """``{knob: value}`` from the markdown cell that holds "Predict, then turn a knob"."""
    text = "\n".join(cell.source for cell in notebook.cells
                     if cell.cell_type == "markdown" and "## Predict, then turn a knob" in cell.source)
    section = text[text.index("## Predict, then turn a knob"):] if text else ""
    return dict(SUGGESTION.findall(section.split("\n## ", 1)[0] if section.count("\n## ") else section))


def with_knobs(notebook: nbformat.NotebookNode, values: dict[str, str]) -> nbformat.NotebookNode:
    """``notebook`` with each knob's line in its ``parameters`` cell set to ``values[knob]``."""
    cell = next(cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", []))
    for name, value in values.items():
        pattern = re.compile(rf"^{name} = .*?(  # .*)?$", re.MULTILINE)
        assert pattern.search(cell.source), f"knob {name} is not in the parameters cell"
        cell.source = pattern.sub(lambda match: f"{name} = {value}{match.group(1) or ''}", cell.source)
    return notebook


CHAPTERS = sorted(PART_ONE.glob("*.ipynb"))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_every_suggested_knob_value_runs_the_chapter(path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)   # under CI every claim is strict; a reader's knobs only warn
    notebook = nbformat.read(path, as_version=4)
    values = suggestions(notebook)
    assert values, f"{path.name}: no `Set `KNOB = value`` suggestion in its knob section"
    client = NotebookClient(with_knobs(notebook, values), timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()   # raises CellExecutionError naming the cell that failed


def test_suggestions_are_read_from_the_knob_section_only():
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Set `EARLIER = 1` is not a knob suggestion."),
        nbformat.v4.new_markdown_cell("## Predict, then turn a knob\n\n1. Set `ALPHA = 2.0`. Why?\n\n## Exercises\n\n"
                                      "Set `LATER = 3`")])
    assert suggestions(notebook) == {"ALPHA": "2.0"}
