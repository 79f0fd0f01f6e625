"""Tests of the chapter executor behind `make book` (tools/book_tools.py)."""
import errno
import os
import resource
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import book_tools  # noqa: E402
from book_tools import ChapterError, execute_book, toc_documents, toc_notebooks, write_notebook  # noqa: E402


def make_notebook(path, *sources):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)


def test_toc_documents_follow_the_book_order(tmp_path):
    (tmp_path / "book").mkdir()
    for name in ("intro.md", "b.ipynb", "a.ipynb", "api.md"):
        (tmp_path / "book" / name).write_text("{}")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n"
        "  - caption: One\n    chapters:\n      - file: book/b\n      - file: book/a\n"
        "  - caption: Two\n    chapters:\n      - file: book/api\n"
    )
    assert [path.name for path in toc_documents(tmp_path)] == ["intro.md", "b.ipynb", "a.ipynb", "api.md"]
    assert [path.name for path in toc_notebooks(tmp_path)] == ["b.ipynb", "a.ipynb"]


def test_toc_documents_name_a_missing_entry(tmp_path):
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    with pytest.raises(FileNotFoundError, match="book/intro"):
        toc_documents(tmp_path)


def test_execute_book_stores_outputs_in_the_profile_without_cuda(tmp_path):
    path = tmp_path / "chapter.ipynb"
    make_notebook(path, "import os", "print(os.environ['SPARSE_TUTORIAL_PROFILE'], repr(os.environ['CUDA_VISIBLE_DEVICES']))")
    seconds = execute_book([path], timeout=120, profile_name="full")
    cells = nbformat.read(path, as_version=4).cells
    assert [cell.execution_count for cell in cells] == [1, 2]
    assert cells[1].outputs[0].text == "full ''\n"
    assert seconds[path] > 0
    assert not any("execution" in cell.metadata for cell in cells)  # no timestamps: stable diffs


@pytest.mark.parametrize(("source", "error"), [("1 / 0", "ZeroDivisionError"), ("import os; os._exit(1)", "DeadKernelError")],
                         ids=["a cell raises", "the kernel dies"])
def test_execute_book_names_the_failing_chapter_and_keeps_it_unchanged(tmp_path, source, error):
    path = tmp_path / "broken.ipynb"
    make_notebook(path, source)
    before = path.read_text()
    with pytest.raises(ChapterError, match=f"(?s)broken.ipynb.*{error}"):
        execute_book([path], timeout=120)
    assert path.read_text() == before


def test_execute_book_rejects_an_unknown_profile(tmp_path):
    with pytest.raises(ValueError, match="profile_name"):
        execute_book([tmp_path / "x.ipynb"], profile_name="huge")


def test_execute_book_stops_a_chapter_past_its_time_budget(tmp_path):
    path = tmp_path / "slow.ipynb"
    make_notebook(path, "import time; time.sleep(1.5)", "time.sleep(1.5)", "time.sleep(1.5)")
    with pytest.raises(ChapterError, match="slow.ipynb"):
        execute_book([path], timeout=3)  # every cell fits in 3 s, the three together do not


@pytest.fixture
def disk_full_after():
    """``disk_full_after(n)``: from then on, this process cannot grow a file past ``n`` bytes (EFBIG), as a
    full disk would stop it; the limit is lifted after the test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    yield lambda size: resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def test_write_notebook_on_a_full_disk_keeps_the_chapter(tmp_path, disk_full_after):
    path = tmp_path / "chapter.ipynb"
    make_notebook(path, "print('the stored chapter')")
    before = path.read_text()
    executed = nbformat.read(path, as_version=4)
    executed.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * 200_000)]
    disk_full_after(50_000)
    with pytest.raises(OSError):
        write_notebook(executed, path)
    assert path.read_text() == before
    assert os.listdir(tmp_path) == ["chapter.ipynb"]  # no temporary file left behind


def test_execute_book_names_the_chapter_it_could_not_write(tmp_path, monkeypatch):
    path = tmp_path / "unwritable.ipynb"
    make_notebook(path, "1 + 1")

    def disk_full(notebook, target):
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr(book_tools, "write_notebook", disk_full)
    with pytest.raises(ChapterError, match="(?s)unwritable.ipynb failed.*No space left on device"):
        execute_book([path], timeout=120)
