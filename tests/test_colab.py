"""The Colab path, end to end: the package as pip installs it, each chapter run from an empty folder.

On Colab a chapter's first cell pip-installs the library from the repository: no clone around it, no
``book/results``, an empty data cache. The chapters must still show the stored-run tables and verdicts of
the rendered book, so the wheel ships ``book/results/*.json`` (as ``sparse_tutorial/stored_results``, see
``pyproject.toml``) and ``load_results`` falls back on that copy.

The convention that makes this checkable: a code cell tagged ``stored-results`` reads the stored results
and shows them (or defines what such cells use). It runs after the chapter's set-up cells -- its first code
cell and its ``parameters`` cell -- and the ``stored-results`` cells before it, with nothing else (no data,
no training), and its output is the same on any machine: nbval compares it digit for digit. A cell that
calls ``load_results`` is tagged so, unless it is the first code cell (which always runs).

:func:`test_stored_results_cells_show_the_book_from_a_pip_install` builds the package the way pip does (an
sdist, then a wheel from the sdist), installs it with ``--no-deps`` into a fresh virtual environment and
executes the set-up and ``stored-results`` cells of each notebook that reads stored results in a fresh
kernel of that environment, from an empty folder with an empty data cache and no package index; their
outputs must be the stored ones.

The environment is a venv of another CPython build where the machine has one (Debian's python3.11 beside
the pyenv 3.11 the project's ``.venv`` comes from), without the project's ``.venv`` but with its third-party
packages on a ``.pth`` line: such a line only adds a folder to ``sys.path``, it does not run the ``.pth``
files inside it, so the editable install of the repository there stays inactive. A package set other than
the Makefile's (Colab's numpy 2.1, torch 2.11) cannot be installed here: torch is pinned to 2.13.0 on this
project's machines and the test must run offline. That is a documented decision, not an oversight.
"""
import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import nbformat
import pytest

from sparse_tutorial.experiments import load_results
from sparse_tutorial.runs import runner
from test_nbval_sanitize import sanitize

REPO_ROOT = Path(__file__).resolve().parent.parent
BOOK = REPO_ROOT / "book"
RESULTS = sorted((BOOK / "results").glob("*.json"))
NOTEBOOKS = sorted(path for path in BOOK.rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts)
STORED = "stored-results"
CHAPTER_TIMEOUT = 300  # seconds for one chapter's set-up and stored-results cells (about 10 s on 2 cores)


def tags(cell: nbformat.NotebookNode) -> set[str]:
    return set(cell.metadata.get("tags", []))


def code_cells(path: Path) -> list[nbformat.NotebookNode]:
    return [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]


def colab_cells(path: Path) -> list[nbformat.NotebookNode]:
    """The set-up cells (the first code cell, the ``parameters`` cell) and the ``stored-results`` cells."""
    cells = code_cells(path)
    return [cell for index, cell in enumerate(cells) if index == 0 or tags(cell) & {"parameters", STORED}]


def reads_stored_results(path: Path) -> bool:
    return any("load_results(" in cell.source or STORED in tags(cell) for cell in code_cells(path))


def strict_json(text: str) -> object:
    def reject(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON (write null)")

    return json.loads(text, parse_constant=reject)


@pytest.mark.parametrize("path", RESULTS, ids=lambda path: path.name)
def test_committed_results_are_strict_json(path):
    strict_json(path.read_text(encoding="utf-8"))


def test_strict_json_rejects_nan():
    with pytest.raises(ValueError, match="NaN is not JSON"):
        strict_json('{"median": NaN}')


def test_load_results_prefers_your_own_run_then_the_copy_shipped_with_the_package(tmp_path, monkeypatch):
    own, shipped = tmp_path / "own", tmp_path / "shipped"
    own.mkdir(), shipped.mkdir()
    monkeypatch.setattr(runner, "results_dir", lambda: own)
    monkeypatch.setattr(runner, "STORED_RESULTS", shipped)
    (shipped / "nmt.json").write_text('{"run": "the book\'s"}')
    assert load_results("nmt") == {"run": "the book's"}
    (own / "nmt.json").write_text('{"run": "yours"}')
    assert load_results("nmt") == {"run": "yours"}
    assert load_results("nmt", shipped) == {"run": "the book's"}  # an explicit folder is the only place looked
    assert load_results("never-run") is None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: str(path.relative_to(BOOK)))
def test_cells_reading_stored_results_are_tagged_and_compared(path):
    for number, cell in enumerate(code_cells(path), start=1):
        where = f"{path.name}, code cell {number}"
        if "load_results(" in cell.source and number > 1:
            assert STORED in tags(cell), f"{where} reads stored results: tag it {STORED!r}"
        if STORED in tags(cell):
            assert "nbval-ignore-output" not in tags(cell), f"{where}: stored results print the same everywhere"


@pytest.mark.parametrize("path", [path for path in NOTEBOOKS if path.parent.name in ("part2", "part3")],
                         ids=lambda path: path.stem)
def test_experiment_chapters_show_stored_results(path):
    assert any(STORED in tags(cell) for cell in code_cells(path)), f"{path.name} has no {STORED!r} cell"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The package as pip builds it offline: an sdist of the worktree, then a wheel built from that sdist."""
    dist = tmp_path_factory.mktemp("dist")
    build_sdist = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    built = subprocess.run([sys.executable, "-c", build_sdist, str(dist)], cwd=REPO_ROOT, capture_output=True,
                           text=True, check=True)
    sdist = dist / built.stdout.split()[-1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--wheel-dir", str(dist), str(sdist)], capture_output=True, check=True)
    return next(dist.glob("*.whl"))


def test_the_wheel_ships_the_library_its_shipped_models_and_the_stored_results_only(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    library = {str(path.relative_to(REPO_ROOT)) for path in (REPO_ROOT / "sparse_tutorial").rglob("*")
               if path.suffix in (".py", ".cpp")}
    assert library - names == set(), "modules of the tree missing from the wheel (list them in pyproject.toml)"
    weights = {str(path.relative_to(REPO_ROOT)) for path in (REPO_ROOT / "sparse_tutorial" / "pretrained").rglob("*")
               if path.suffix in (".safetensors", ".json")}
    assert weights and weights - names == set(), "the shipped models must travel with the version that made them"
    shipped = {name for name in names if name.startswith("sparse_tutorial/stored_results/")}
    assert shipped == {f"sparse_tutorial/stored_results/{path.name}" for path in RESULTS}
    stray = {name for name in names if not name.startswith(("sparse_tutorial/", "sparse_tutorial-"))}
    assert not stray, f"the wheel ships files outside the package: {stray}"


def _other_interpreter() -> Path:
    """A CPython of this version (the reused packages are compiled for it), of another build when the machine
    has one; else this venv's own base interpreter."""
    base = Path(sys._base_executable).resolve()
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    others = [path for path in (Path("/usr/bin") / name, Path("/usr/local/bin") / name)
              if path.exists() and path.resolve() != base]
    return others[0] if others else base


@pytest.fixture(scope="module")
def colab_python(wheel, tmp_path_factory) -> Path:
    """The interpreter of a fresh venv holding the wheel (``--no-deps``) and this venv's other packages."""
    venv = tmp_path_factory.mktemp("colab-venv")
    subprocess.run([str(_other_interpreter()), "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "project_packages.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target",
                    purelib, str(wheel)], capture_output=True, check=True)
    return python


def colab_environment(home: Path) -> dict[str, str]:
    """An empty home and data cache, no PYTHONPATH, and no package index: a fetch would fail, not download."""
    return {"PATH": os.environ["PATH"], "HOME": str(home), "SPARSE_TUTORIAL_CACHE": str(home / "cache"),
            "PIP_NO_INDEX": "1", "LANG": "C.UTF-8"}


def test_a_pip_install_finds_every_stored_result(colab_python, tmp_path):
    probe = ("import json, sys, sparse_tutorial\nfrom sparse_tutorial.experiments import load_results\n"
             "print(json.dumps({'module': sparse_tutorial.__file__, "
             "'results': {name: load_results(name) for name in sys.argv[1:]}}))")
    shown = subprocess.run([colab_python, "-c", probe, *(path.stem for path in RESULTS)], cwd=tmp_path,
                           env=colab_environment(tmp_path), capture_output=True, text=True, check=True)
    seen = json.loads(shown.stdout)
    assert Path(seen["module"]).is_relative_to(colab_python.parent.parent), "the repository was imported"
    for path in RESULTS:
        assert seen["results"][path.stem] == json.loads(path.read_text(encoding="utf-8")), path.name


def shown_text(cell: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """What a reader sees of a cell, as text, sanitized as nbval does: streams (consecutive chunks joined),
    every non-image representation of a display, errors."""
    shown: list[tuple[str, str]] = []
    for output in cell.outputs:
        if output.output_type == "stream":
            if shown and shown[-1][0] == output.name:
                shown[-1] = (output.name, shown[-1][1] + output.text)
            else:
                shown.append((output.name, output.text))
        elif output.output_type == "error":
            shown.append(("error", f"{output.ename}: {output.evalue}"))
        else:
            shown.extend((mime, value if isinstance(value, str) else "".join(value))
                         for mime, value in sorted(output.data.items()) if not mime.startswith("image/"))
    return [(kind, sanitize(text)) for kind, text in shown]


PROBE = """import json, os, sys, sparse_tutorial
print(json.dumps({"python": sys.executable, "module": sparse_tutorial.__file__, "folder": sorted(os.listdir()),
                  "cache": os.path.exists(os.environ["SPARSE_TUTORIAL_CACHE"])}))"""


@pytest.mark.parametrize("path", [path for path in NOTEBOOKS if reads_stored_results(path)], ids=lambda path: path.stem)
def test_stored_results_cells_show_the_book_from_a_pip_install(path, colab_python, tmp_path):
    cells = colab_cells(path)
    folder = tmp_path / "content"  # Colab's working folder: nothing in it but the notebook
    folder.mkdir()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell.source, id=cell.id) for cell in cells]
                                        + [nbformat.v4.new_code_cell(PROBE)])
    notebook.metadata = nbformat.read(path, as_version=4).metadata
    copy = folder / path.name
    nbformat.write(notebook, copy)
    execution = subprocess.run([colab_python, str(REPO_ROOT / "tools" / "book_tools.py"), "execute", str(copy),
                                "--timeout", str(CHAPTER_TIMEOUT)], env=colab_environment(tmp_path),
                               capture_output=True, text=True)
    assert execution.returncode == 0, execution.stderr[-3000:]
    executed = nbformat.read(copy, as_version=4).cells
    probe = json.loads(executed[-1].outputs[0].text)
    assert Path(probe["python"]) == colab_python and Path(probe["module"]).is_relative_to(colab_python.parent.parent)
    assert probe["folder"] == [path.name], "the cells wrote into the working folder"
    assert not probe["cache"], "the set-up and stored-results cells fetched data"
    for stored, fresh in zip(cells, executed):
        assert shown_text(fresh) == shown_text(stored), f"{path.name}: cell {stored.id} shows other text than the book"
