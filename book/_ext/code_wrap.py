"""Sphinx extension of this book: long lines of a notebook cell wrap instead of scrolling sideways.

The theme gives every code block a horizontal scrollbar when a line is wider than the text column, which
hides the end of long lines and puts a scrollbar under every wide cell. This serves one small style sheet
that wraps the lines of notebook cells (inputs and printed outputs), indenting the continuation.
"""
from pathlib import Path

from sphinx.application import Sphinx

STYLE_SHEET = "code-wrap.css"
STYLE = """/* written by book/_ext/code_wrap.py */
div.cell div.cell_input pre, div.cell div.cell_output pre {
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  overflow-x: hidden;
}
"""


def _write_style_sheet(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        (static / STYLE_SHEET).write_text(STYLE, encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.add_css_file(STYLE_SHEET)
    app.connect("build-finished", _write_style_sheet)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
