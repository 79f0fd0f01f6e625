"""Fixtures shared by the tests of the built book (tests/test_book_links.py, tests/test_browser.py), and the
environment of the kernels nbval starts."""
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent
BUILT_HTML = REPO_ROOT / "_build" / "html"

# The stored outputs carry no progress bar (tools/book_tools.py executes the chapters with TQDM_DISABLE):
# the kernels nbval starts inherit this process's environment and run the chapters the same way.
os.environ.setdefault("TQDM_DISABLE", "1")


@pytest.fixture(scope="session")
def built_book() -> Path:
    """The HTML book built by ``make html`` (``make test`` builds it before running pytest)."""
    if not (BUILT_HTML / "index.html").is_file():
        pytest.fail(f"no built book in {BUILT_HTML}: run `make html` first (`make test` does)")
    return BUILT_HTML
