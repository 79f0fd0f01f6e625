"""Sphinx extension of this book: plotly.js is served with the book, for the interactive figures.

The chapters' interactive figures (:mod:`sparse_tutorial.interactive`) are HTML outputs that draw with
plotly.js once it is on the page. This copies the ``plotly.min.js`` that the installed ``plotly`` package
ships into ``_static/`` and loads it on the pages that hold such a figure (and only there: it is 4.6 MB),
so the book needs no CDN. It is the plotly.js version that the Python package wrote its figures for.
"""
from pathlib import Path

from sphinx.application import Sphinx

PLOTLY_JS = "plotly.min.js"
FIGURE_CLASS = 'class="plotly-graph-div"'
"""Marks an interactive figure in a page's HTML (written by :class:`sparse_tutorial.interactive.InteractiveFigure`)."""


def _load_on_pages_with_figures(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if FIGURE_CLASS in context.get("body", ""):
        app.add_js_file(PLOTLY_JS)  # called here, Sphinx adds the script to this page only


def _copy_plotly_js(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        from plotly.offline import get_plotlyjs

        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        (static / PLOTLY_JS).write_text(get_plotlyjs(), encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _load_on_pages_with_figures)
    app.connect("build-finished", _copy_plotly_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
