"""pyproject.toml declares exactly what the library imports: a module-level import of a third-party package is
a dependency, an import inside a function (run only by the feature that needs it, e.g. ``import ray`` for a
parallel sweep) belongs in an extra. The imports are read from the source with ``ast``, nothing is run."""
from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
import tomllib
from pathlib import Path


REPO_ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

BOOK_EXTRA = "book"
"""The extra a chapter's first cell installs (``sparse_tutorial[book]``): what the chapters import beyond the
library's dependencies (pandas, sympy), and plotly for the interactive figures they draw."""

PROJECT_EXTRAS = {"test", BOOK_EXTRA}
"""Extras for reading or working on the project (the chapters; pytest, nbval, ...), not features of the library."""

KERNEL_MODULES = {"IPython"}
"""Imported by the chapters from the Jupyter kernel that runs them, which is not the library's to install."""


def distribution_name(requirement: str) -> str:
    """``"rouge-score>=0.1.2"`` -> ``"rouge-score"``, normalised as PEP 503 does."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement).group()).lower()


def third_party_imports(source: str) -> tuple[set[str], set[str]]:
    """The top-level names of the modules ``source`` imports: ``(at module level, only inside functions)``;
    the library's own and the standard library's are left out."""
    eager: set[str] = set()
    lazy: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module]
        (lazy if in_function else eager).update(name.split(".")[0] for name in names)
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(source), in_function=False)
    own = set(sys.stdlib_module_names) | {"sparse_tutorial"}
    return eager - own, lazy - eager - own


def distributions_of(modules: set[str]) -> set[str]:
    """The installed distributions that provide ``modules`` (``sklearn`` -> ``scikit-learn``)."""
    provided_by = importlib.metadata.packages_distributions()
    unknown = sorted(module for module in modules if module not in provided_by)
    assert not unknown, f"the library imports modules no installed distribution provides: {unknown}"
    return {distribution_name(dist) for module in modules for dist in provided_by[module]}


DEPENDENCIES = {distribution_name(requirement) for requirement in PROJECT["dependencies"]}
EXTRAS = {name: {distribution_name(requirement) for requirement in requirements}
          for name, requirements in PROJECT["optional-dependencies"].items()}
"""pyproject.toml's dependencies, and its extras by name, as normalised distribution names."""


def chapter_imports() -> set[str]:
    """The top-level names of the third-party modules the chapters' code cells import (IPython magics such as
    ``%pip`` are read as ``pass``)."""
    modules: set[str] = set()
    for path in (REPO_ROOT / "book").rglob("*.ipynb"):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                source = re.sub(r"^(\s*)[%!].*$", r"\1pass", "".join(cell["source"]), flags=re.MULTILINE)
                eager, lazy = third_party_imports(source)
                modules |= eager | lazy
    return modules


def library_imports() -> tuple[set[str], set[str]]:
    """Distributions the library imports ``(at module level, only inside functions)``."""
    eager: set[str] = set()
    lazy: set[str] = set()
    for path in (REPO_ROOT / "sparse_tutorial").rglob("*.py"):
        module_eager, module_lazy = third_party_imports(path.read_text(encoding="utf-8"))
        eager |= module_eager
        lazy |= module_lazy
    return distributions_of(eager), distributions_of(lazy - eager)


def test_third_party_imports_tells_module_level_from_function_level():
    source = ("import numpy as np\nfrom scipy.stats import kendalltau\nimport json\nfrom sparse_tutorial import x\n"
              "def sweep():\n    import ray\n    import numpy\n"
              "class Plot:\n    def draw(self):\n        from matplotlib import pyplot\n")
    assert third_party_imports(source) == ({"numpy", "scipy"}, {"ray", "matplotlib"})


def test_the_dependencies_are_exactly_the_module_level_imports():
    eager, _ = library_imports()
    assert eager - DEPENDENCIES == set(), "imported at module level by the library but not in its dependencies"
    assert DEPENDENCIES - eager == set(), "dependencies the library does not import (a chapter's belong in the book extra)"


def test_every_function_level_import_is_an_extra_and_every_extra_is_imported():
    _, lazy = library_imports()
    features = set().union(*(packages for name, packages in EXTRAS.items() if name not in PROJECT_EXTRAS))
    assert lazy - features == set(), "imported inside a function of the library but in no extra"
    assert features - lazy == set(), "in an extra, but the library never imports it"


def test_the_book_extra_is_what_the_chapters_import_beyond_the_library():
    chapters = distributions_of(chapter_imports() - KERNEL_MODULES)
    book = EXTRAS[BOOK_EXTRA]
    assert chapters - DEPENDENCIES - book == set(), "imported by a chapter, installed by neither the library nor the book extra"
    assert book - chapters == EXTRAS["interactive"], "in the book extra, imported by no chapter and not plotly"
