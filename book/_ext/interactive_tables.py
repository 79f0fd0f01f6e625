"""Sphinx extension of this book: the DataTables bundle of ``itables`` is served with the book, for the
scorecard's interactive table.

The scorecard page shows its claims with :func:`itables.to_html_datatable`, which imports the bundle from
``_static/itables/dt_bundle.js`` (:data:`BUNDLE_URL`, relative to a page of ``book/<part>/``).
This copies the ``dt_bundle.js`` and ``dt_bundle.css`` that the installed ``itables`` package ships there, so
the table sorts and searches without a CDN. Without JavaScript the page shows the same table as plain HTML.
"""
import shutil
from pathlib import Path

from sphinx.application import Sphinx

BUNDLE_URL = "../../_static/itables/dt_bundle.js"
"""Where a page of ``book/<part>/`` imports the bundle from (the scorecard passes it as ``dt_url``): the
built book keeps the pages two folders below its root, beside ``_static/``."""


def _copy_bundle(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        import itables

        target = Path(app.outdir) / "_static" / "itables"
        target.mkdir(parents=True, exist_ok=True)
        for name in ("dt_bundle.js", "dt_bundle.css"):
            shutil.copyfile(Path(itables.__file__).parent / "html" / name, target / name)


def setup(app: Sphinx) -> dict:
    app.connect("build-finished", _copy_bundle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
