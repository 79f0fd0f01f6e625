"""The table of contents matches the chapters on disk, and every internal link of the built book resolves.

An offline stand-in for Sphinx's ``linkcheck``: it parses every page of ``_build/html`` and checks that
each relative ``href``/``src`` names a file of the built site and, for links to a page, that the
``#fragment`` is an id of that page. External links (https://...) are not followed.
"""
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from book_tools import REPO_ROOT, toc_documents, toc_notebooks  # noqa: E402

REPOSITORY = "sparse-attention-book/sparse-attention-book"


class _PageLinks(HTMLParser):
    """Collects the ids and the (attribute, value) of every link-like attribute of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            elif name in ("href", "src") and value:
                self.links.append(value)


def _parse(page: Path) -> _PageLinks:
    parser = _PageLinks()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def _pages(built_book: Path) -> list[Path]:
    return sorted(path for path in built_book.rglob("*.html") if "_static" not in path.relative_to(built_book).parts)


def test_toc_entries_exist_and_every_chapter_is_listed():
    documents = toc_documents()
    assert documents[0] == REPO_ROOT / "book" / "intro.md"
    on_disk = {path for path in (REPO_ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts}
    missing = sorted(str(path.relative_to(REPO_ROOT)) for path in on_disk - set(toc_notebooks()))
    assert not missing, f"notebooks under book/ that _toc.yml does not list: {missing}"


def test_internal_links_resolve(built_book):
    pages = _pages(built_book)
    assert len(pages) >= 3
    parsed = {page: _parse(page) for page in pages}
    broken = []
    for page, links in parsed.items():
        for link in links.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(built_book)}: {link} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(built_book)}: {link} (no such anchor)")
    assert not broken, "broken internal links:\n" + "\n".join(broken)


@pytest.mark.parametrize("chapter", toc_notebooks(), ids=lambda path: path.stem)
def test_chapter_page_launches_its_notebook_on_colab(built_book, chapter):
    relative = chapter.relative_to(REPO_ROOT)
    page = built_book / relative.with_suffix(".html")
    colab = [link for link in _parse(page).links if link.startswith("https://colab.research.google.com/")]
    expected = f"https://colab.research.google.com/github/{REPOSITORY}/blob/main/{relative.as_posix()}"
    assert colab == [expected], f"{page.name}: Colab launch links {colab}, expected [{expected}]"
