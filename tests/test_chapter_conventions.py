"""Every chapter opens the way a Colab reader needs it to (see the book's intro and COMMON conventions).

The first code cell installs the library from the repository only when it is missing, with no pinned
versions (pins break on Colab's preinstalled stack), applies the shared plot style and seeds the run; a
chapter that trains (Parts II and III) says above its first code cell how long the quick (CPU) and full
(GPU) profiles take, and has a cell tagged ``parameters`` that sets ``PROFILE``. The README's
and the intro's library examples run as printed.
"""
import re
from pathlib import Path

import nbformat
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
BOOK = REPO_ROOT / "book"
NOTEBOOKS = sorted(path for path in BOOK.rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts)
EXPERIMENT_PARTS = {"part2", "part3"}
INSTALL = "%pip install -q git+https://github.com/sparse-attention-book/sparse-attention-book"


def code_sources(path: Path) -> list[nbformat.NotebookNode]:
    return [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: str(path.relative_to(BOOK)))
def test_first_cell_installs_the_library_only_when_missing(path):
    first = code_sources(path)[0].source
    assert re.search(r"try:\s+import sparse_tutorial\s+except ImportError:\s+" + re.escape(INSTALL), first), (
        f"{path.name}: the first code cell must be `try: import sparse_tutorial / except ImportError: {INSTALL}`"
    )
    pins = [line for line in first.splitlines() if "pip install" in line and re.search(r"==|@v?\d", line)]
    assert not pins, f"{path.name}: pinned installs break on Colab: {pins}"
    assert "set_style()" in first and "seed_everything(" in first, f"{path.name}: set_style() and a seed in cell 1"


@pytest.mark.parametrize(
    "path", [path for path in NOTEBOOKS if path.parent.name in EXPERIMENT_PARTS] or [None], ids=str
)
def test_experiment_chapters_have_a_profile_parameter_cell(path):
    if path is None:
        pytest.skip("no Part II/III chapter yet")
    tagged = [cell.source for cell in code_sources(path) if "parameters" in cell.metadata.get("tags", [])]
    assert tagged and "PROFILE" in tagged[0], f"{path.name}: needs a cell tagged `parameters` setting PROFILE"
    assert "default_device()" in code_sources(path)[0].source, f"{path.name}: pick the device with default_device()"
    cells = nbformat.read(path, as_version=4).cells
    first_code = next(index for index, cell in enumerate(cells) if cell.cell_type == "code")
    note = " ".join(cell.source for cell in cells[:first_code] if cell.cell_type == "markdown")
    assert re.search(r"quick.*\d+\s*(s|seconds?|min|minutes?|h|hours?)\b", note, re.DOTALL | re.IGNORECASE) and re.search(
        r"full.*\d+\s*(s|seconds?|min|minutes?|h|hours?)\b", note, re.DOTALL | re.IGNORECASE
    ), f"{path.name}: say above the first code cell how long the quick (CPU) and full (GPU) profiles take"


def python_blocks(markdown: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown.read_text(encoding="utf-8"), re.DOTALL)


@pytest.mark.parametrize("document", ["README.md", "book/intro.md"])
def test_library_examples_run(document, capsys):
    blocks = python_blocks(REPO_ROOT / document)
    assert blocks, f"{document} has no python example"
    for block in blocks:
        exec(compile(block, document, "exec"), {})
    assert "tensor([[0.8000, 0.2000, 0.0000, 0.0000]])" in capsys.readouterr().out
