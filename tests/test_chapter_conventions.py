"""Every chapter opens the way a Colab reader needs it to (see the book's intro and COMMON conventions).

The first code cell installs the library from the repository only when it is missing, with no pinned
versions (pins break on Colab's preinstalled stack), applies the shared plot style and seeds the run; a
chapter that trains (Parts II and III) says above its first code cell how long the quick (CPU) and full
(GPU) profiles take, and has a cell tagged ``parameters`` that sets ``PROFILE``. Every first code cell
mentions ``PROFILE``: an experiment chapter's says how to switch to ``PROFILE = "full"`` on a GPU and picks
the device with ``default_device()``; a Part I chapter (or the appendix) says it has no profile and sets no
device it never uses. The README's and the intro's library examples run as printed.
"""
import ast
import importlib.metadata
import re
from pathlib import Path

import nbformat
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
BOOK = REPO_ROOT / "book"
NOTEBOOKS = sorted(path for path in BOOK.rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts)
EXPERIMENT_PARTS = {"part2", "part3"}
INSTALL = '%pip install -q "sparse_tutorial[book] @ git+https://github.com/sparse-attention-book/sparse-attention-book"'


def code_sources(path: Path) -> list[nbformat.NotebookNode]:
    return [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]


BOOK_EXTRA_IMPORTS = {"matplotlib", "seaborn", "sacrebleu", "rouge_score", "plotly", "pandas", "sympy", "itables"}
"""What the ``book`` extra installs, by import name: what a chapter's first cell checks for."""


def test_the_first_cells_modules_are_the_book_extra():
    from test_dependencies import EXTRAS, distribution_name

    provided_by = importlib.metadata.packages_distributions()
    assert {distribution_name(dist) for module in BOOK_EXTRA_IMPORTS for dist in provided_by[module]} == EXTRAS["book"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: str(path.relative_to(BOOK)))
def test_first_cell_installs_the_library_and_the_book_extra_when_any_is_missing(path):
    """A reader who has the plain package (or Colab's matplotlib but not itables) still gets the extra."""
    first = code_sources(path)[0].source
    found = re.search(r"BOOK_EXTRA = \(([^)]*)\)[^\n]*\nif not all\(importlib\.util\.find_spec\(name\) for name in "
                      r"BOOK_EXTRA\):\n    " + re.escape(INSTALL), first)
    assert found, f"{path.name}: the first code cell must install {INSTALL} when a module of BOOK_EXTRA is missing"
    assert set(re.findall(r'"(\w+)"', found.group(1))) == {"sparse_tutorial"} | BOOK_EXTRA_IMPORTS
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


def is_experiment(path: Path) -> bool:
    return path.parent.name in EXPERIMENT_PARTS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: str(path.relative_to(BOOK)))
def test_first_cell_says_how_to_pick_the_profile(path):
    cells = code_sources(path)
    first = cells[0].source
    assert "PROFILE" in first, (
        f"{path.name}: the first code cell must mention PROFILE (how to switch to the full profile, or, in a "
        "chapter without one, a comment saying so)"
    )
    if is_experiment(path):
        assert 'PROFILE = "full"' in first, (
            f'{path.name}: the first code cell must say, in a comment, to pick a GPU runtime and set PROFILE = "full"'
        )
        assert "default_device()" in first, f"{path.name}: the first code cell must pick the device with default_device()"
    else:
        comment = " ".join(line for line in first.splitlines() if line.lstrip().startswith("#"))
        assert re.search(r"no PROFILE", comment), f"{path.name}: say in a comment of the first code cell that it has no PROFILE"
        if re.search(r"^device\s*=", first, re.MULTILINE):
            later = "\n".join(cell.source for cell in cells[1:])
            assert re.search(r"\bdevice\b", later), f"{path.name}: `device` is set in the first cell but never used"


@pytest.mark.parametrize(
    "path",
    [path for path in NOTEBOOKS if is_experiment(path)] or [None],
    ids=lambda path: str(path.relative_to(BOOK)) if path else "none",
)
def test_profile_parameter_line_names_the_full_profile(path):
    if path is None:
        pytest.skip("no Part II/III chapter yet")
    tagged = [cell.source for cell in code_sources(path) if "parameters" in cell.metadata.get("tags", [])]
    assert tagged, f"{path.name}: needs a cell tagged `parameters` setting PROFILE"
    lines = [line for line in tagged[0].splitlines() if re.match(r"\s*PROFILE\s*=", line)]
    assert lines and all(re.search(r"#.*\bfull\b", line) for line in lines), (
        f'{path.name}: the PROFILE line of the parameters cell needs a comment naming "full", '
        f'e.g. PROFILE = profile()  # "quick" (CPU) or "full" (GPU); got {lines}'
    )


def python_blocks(markdown: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown.read_text(encoding="utf-8"), re.DOTALL)


@pytest.mark.parametrize("document", ["README.md", "book/intro.md"])
def test_library_examples_run(document, capsys):
    blocks = python_blocks(REPO_ROOT / document)
    assert blocks, f"{document} has no python example"
    for block in blocks:
        exec(compile(block, document, "exec"), {})
    assert "tensor([[0.8000, 0.2000, 0.0000, 0.0000]])" in capsys.readouterr().out


IGNORE_OUTPUT = "nbval-ignore-output"
IGNORE_REASONS = {
    "machine-dependent": "prints trained numbers, which move with the CPU's vector kernels and thread count",
    "timing": "prints wall-clock times or speeds",
}
"""Why nbval may ignore a cell's text: one of these tags goes with every ``nbval-ignore-output``."""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: str(path.relative_to(BOOK)))
def test_ignored_outputs_say_why_and_keep_their_claims(path):
    for number, cell in enumerate(code_sources(path), start=1):
        tags = set(cell.metadata.get("tags", []))
        reasons = tags & set(IGNORE_REASONS)
        where = f"{path.name}, code cell {number}"
        if IGNORE_OUTPUT in tags:
            assert len(reasons) == 1, f"{where}: tag {IGNORE_OUTPUT} with exactly one reason of {IGNORE_REASONS}"
        else:
            assert not reasons, f"{where}: tagged {reasons} but nbval compares it: add {IGNORE_OUTPUT}"
        if "machine-dependent" in tags:
            assert re.search(r"^\s*(assert\b|check\()", cell.source, re.MULTILINE), (
                f"{where}: nbval ignores its text, so the claim it prints must be an assert (or a "
                "sparse_tutorial.stats.claims check) in the cell"
            )


CHECKED_CHAPTERS = [path for path in NOTEBOOKS if "ClaimChecker(" in path.read_text(encoding="utf-8")
                    and path.parent.name.startswith("part")]


@pytest.mark.parametrize("path", CHECKED_CHAPTERS, ids=lambda path: path.stem)
def test_the_claim_checker_is_set_up_where_the_first_claim_is_checked(path):
    """The reader meets the idea before the machinery: the ClaimChecker is set up by the first statement of a
    cell at most three cells before the first claim is checked (or in that cell), not among the imports
    (issue 60)."""
    code = code_sources(path)
    setups = [index for index, cell in enumerate(code) if "ClaimChecker(" in cell.source]
    assert len(setups) == 1, f"{path.name}: one ClaimChecker set-up cell"
    statements = ast.parse(code[setups[0]].source).body
    assert "ClaimChecker(" in ast.unparse(statements[0]), f"{path.name}: the set-up opens its cell"
    rest = "\n".join(ast.unparse(statement) for statement in statements[1:])
    first_use = setups[0] if re.search(r"(^|[^.\w])check\(", rest) else next(
        index for index, cell in enumerate(code) if index > setups[0] and re.search(r"(^|[^.\w])check\(", cell.source))
    assert first_use <= setups[0] + 3, f"{path.name}: set up the ClaimChecker where the claims are first checked"
    assert setups[0] >= 3, f"{path.name}: the ClaimChecker comes after the set-up, the parameters and the opening"
