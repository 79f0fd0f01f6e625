"""pyproject.toml declares what the library imports, and the plain install is lean.

* The **core** (``import sparse_tutorial``: projections, losses, regularizers, attention; the training loop;
  the shipped models of ``sparse_tutorial.pretrained``) imports only the dependencies, and every
  dependency is imported by it: checked by importing the core in a fresh interpreter where every other
  distribution is hidden, then translating a verse with a shipped model.
* Every other third-party import of the library (module level in a feature's module, such as matplotlib in
  ``plotting``, or inside a function, such as ``ray`` for a parallel sweep) is in an extra, and every
  extra's package is imported somewhere.
* The ``book`` extra is what the chapters import beyond the dependencies.

The imports are read from the source with ``ast``.
"""
from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
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


def _extra(name: str) -> set[str]:
    """The normalised distributions of extra ``name``, with ``sparse_tutorial[a,b]`` expanded to extras a and b."""
    packages: set[str] = set()
    for requirement in PROJECT["optional-dependencies"][name]:
        own = re.fullmatch(r"sparse_tutorial\[([a-z,]+)\]", requirement)
        packages |= set().union(*map(_extra, own.group(1).split(","))) if own else {distribution_name(requirement)}
    return packages


EXTRAS = {name: _extra(name) for name in PROJECT["optional-dependencies"]}
"""pyproject.toml's dependencies, and its extras by name, as normalised distribution names."""
CORE_IMPORT = ("import sparse_tutorial, sparse_tutorial.training, sparse_tutorial.pretrained as pretrained\n"
               "print(pretrained.load('nmt', '+Sparsemax').translate('Im Anfang war das Wort.').text)")
"""What the plain install must run: the library's core, and a shipped model translating a verse."""


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


def _with_requirements(names: set[str]) -> set[str]:
    """``names`` and every distribution they require, transitively (extras' requirements left out)."""
    closure, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in closure:
            continue
        closure.add(name)
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [distribution_name(r) for r in requirements if "extra ==" not in r]
    return closure


_HIDE = """import importlib.abc, sys
class Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hidden())
"""


def test_the_core_runs_with_the_dependencies_alone_and_imports_each_of_them():
    """In a fresh interpreter where every distribution but the dependencies (and what they need) is as if not
    installed, the core imports and a shipped model translates; and it imports every dependency."""
    installed = {distribution_name(dist.metadata["Name"]) for dist in importlib.metadata.distributions()}
    hidden = installed - _with_requirements(DEPENDENCIES | {"torch"}) - {"sparse-tutorial"}
    hidden_modules = {module for module, dists in importlib.metadata.packages_distributions().items()
                      if all(distribution_name(dist) in hidden for dist in dists)}
    probe = ("\nimport json\nprovided = importlib.metadata.packages_distributions()\n"
             "print(json.dumps(sorted({d for m in list(sys.modules) for d in provided.get(m.split('.')[0], [])})))")
    script = f"HIDDEN = {sorted(hidden_modules)!r}\n{_HIDE}import importlib.metadata\n{CORE_IMPORT}{probe}"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT.parent,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    translation, loaded = done.stdout.splitlines()[-2:]
    assert translation.strip(), "the shipped model translated nothing"
    used = {distribution_name(dist) for dist in json.loads(loaded)}
    assert DEPENDENCIES - used == set(), "dependencies the core does not import (they belong in an extra)"
    assert used - _with_requirements(DEPENDENCIES | {"torch"}) - {"sparse-tutorial"} == set()


def test_every_third_party_import_of_the_library_is_a_dependency_or_in_an_extra():
    eager, lazy = library_imports()
    features = set().union(*(packages for name, packages in EXTRAS.items() if name not in PROJECT_EXTRAS))
    assert (eager | lazy) - DEPENDENCIES - features == set(), "imported by the library, in no dependency or extra"
    assert features - (eager | lazy) == set(), "in an extra, but the library never imports it"


def test_the_book_extra_is_what_the_chapters_import_beyond_the_library():
    chapters = distributions_of(chapter_imports() - KERNEL_MODULES)
    book = EXTRAS[BOOK_EXTRA]
    assert chapters - DEPENDENCIES - book == set(), "imported by a chapter, installed by neither the library nor the book extra"
    through_the_library = EXTRAS["metrics"] | EXTRAS["plots"] | EXTRAS["interactive"]
    assert book - chapters - through_the_library == set(), "in the book extra, but no chapter needs it"
