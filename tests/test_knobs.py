"""Issue 32: Part I's exercises and knobs run when the reader does what they ask.

* "Predict, then turn a knob" asks the reader to set a parameter and re-run the chapter, and promises that a
  claim failing away from the defaults only warns (``ClaimWarning``). Each chapter is executed once with
  every value its section suggests (``Set `NAME = value```), so a suggestion that crashes the chapter, or an
  ``assert`` a knob can break, fails the test. (The knobs of one chapter are turned together: one
  execution per chapter keeps the suite short; a crash that one knob alone would cause still shows.)
* Every exercise that asks for a run says how: a knob (``Set `NAME = value``` in the exercise) or a
  ``python`` block in its folded solution, which asserts the solution's answer. Each chapter is executed
  once more with its exercises' knobs set and its solutions' code appended, so a solution whose numbers no
  longer hold fails here.

The kernel runs without ``CI`` in its environment, as a reader's does (under ``CI`` every claim is strict,
knobs or not).
"""
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

PART_ONE = Path(__file__).resolve().parent.parent / "book" / "part1"
SUGGESTION = re.compile(r"Set `([A-Z][A-Z0-9_]*) = ([^`]+)`")


SOLUTION_CODE = re.compile(r"```python\n(.*?)```", re.S)


def section(notebook: nbformat.NotebookNode, title: str) -> str:
    """The markdown of the section ``## title``, up to the next ``## `` heading ("" when there is none)."""
    text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    start = text.find(f"## {title}\n")
    if start < 0:
        return ""
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def suggestions(notebook: nbformat.NotebookNode) -> dict[str, str]:
    """``{knob: value}`` from the section "Predict, then turn a knob"."""
    return dict(SUGGESTION.findall(section(notebook, "Predict, then turn a knob")))


def exercise_runs(notebook: nbformat.NotebookNode) -> tuple[dict[str, str], list[str]]:
    """The exercises' knob values and the ``python`` blocks of their solutions."""
    exercises = section(notebook, "Exercises")
    return dict(SUGGESTION.findall(exercises)), SOLUTION_CODE.findall(exercises)


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


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_every_exercise_that_asks_for_a_run_runs_and_its_solution_holds(path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    notebook = nbformat.read(path, as_version=4)
    knobs, code = exercise_runs(notebook)
    assert knobs or code, f"{path.name}: no exercise says how to run it (a `Set` knob or a solution's code)"
    notebook = with_knobs(notebook, knobs)
    notebook.cells += [nbformat.v4.new_code_cell(block) for block in code]
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()   # raises CellExecutionError naming the cell (a solution's assert included)


def test_exercise_knobs_and_solution_code_are_read_from_the_exercises():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "## Predict, then turn a knob\n\nSet `ALPHA = 2.0`.\n\n## Exercises\n\n1. Set `BETA = 3`.\n\n"
        ":::{admonition} Solution\n```python\nassert BETA == 3\n```\n:::\n")])
    assert exercise_runs(notebook) == ({"BETA": "3"}, ["assert BETA == 3\n"])
    assert suggestions(notebook) == {"ALPHA": "2.0"}


def test_suggestions_are_read_from_the_knob_section_only():
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Set `EARLIER = 1` is not a knob suggestion."),
        nbformat.v4.new_markdown_cell("## Predict, then turn a knob\n\n1. Set `ALPHA = 2.0`. Why?\n\n## Exercises\n\n"
                                      "Set `LATER = 3`")])
    assert suggestions(notebook) == {"ALPHA": "2.0"}
