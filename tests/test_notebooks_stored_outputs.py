"""Every committed chapter carries the outputs of one clean, top-to-bottom run.

nbval compares a cell's fresh output with its stored one, but silently passes a cell that has no stored
output at all; these tests close that gap. A cell that legitimately prints nothing (imports) still has an
execution count once executed, so the counts tell an executed notebook from one saved without running.
"""
from pathlib import Path

import nbformat
import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
NOTEBOOKS = sorted(path for path in BOOK.rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts)


def code_cells(path: Path) -> list:
    notebook = nbformat.read(path, as_version=4)
    return [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip()]


def test_the_book_has_notebooks():
    assert NOTEBOOKS, f"no .ipynb chapters under {BOOK}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: str(path.relative_to(BOOK)))
def test_every_code_cell_was_executed_in_order(path):
    counts = [cell.execution_count for cell in code_cells(path)]
    not_run = [index for index, count in enumerate(counts, start=1) if count is None]
    assert not not_run, f"{path.name}: code cells {not_run} have no stored execution (run the whole notebook)"
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: execution counts {counts} are not 1..{len(counts)}: "
        "execute the notebook top to bottom in a fresh kernel"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: str(path.relative_to(BOOK)))
def test_no_stored_errors_and_some_outputs(path):
    cells = code_cells(path)
    errors = [
        f"cell {index}: {output.ename}: {output.evalue}"
        for index, cell in enumerate(cells, start=1)
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert not errors, f"{path.name} stores error outputs: {errors}"
    assert any(cell.outputs for cell in cells), f"{path.name} has no stored outputs at all"
