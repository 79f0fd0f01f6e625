"""Sphinx extension of this book: attribute and constant docstrings are rendered as written.

napoleon reads the first line of an attribute's docstring as ``type: description`` when it holds a
colon, so ``"Coverage models: none, ..."`` would become a link to a class named "Coverage models". The
library's attribute docstrings are prose (types come from the annotations), so this keeps napoleon away
from them: their lines are saved before napoleon runs and put back after it.
"""
from sphinx.application import Sphinx

_ATTRIBUTE_KINDS = ("attribute", "data")
_saved: dict[str, list[str]] = {}


def _save(app, what, name, obj, options, lines) -> None:
    if what in _ATTRIBUTE_KINDS:
        _saved[name] = list(lines)


def _restore(app, what, name, obj, options, lines) -> None:
    if what in _ATTRIBUTE_KINDS and name in _saved:
        lines[:] = _saved.pop(name)


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx.ext.napoleon")
    app.connect("autodoc-process-docstring", _save, priority=100)
    app.connect("autodoc-process-docstring", _restore, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
