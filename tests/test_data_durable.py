"""Findings 2 and 13 of issue 19 on the data side: the alignments wheel is fetched on any Python, a broken
cache entry counts as not fetched, an unwritable cache fails before downloading, staging folders of killed
fetches do not stay forever, and nothing the data package writes is left half-written."""
import importlib
import os
import time
import zipfile
from pathlib import Path

import pytest

from sparse_tutorial.data import bible_alignments, ding, registry
from sparse_tutorial.data.__main__ import main
from sparse_tutorial.data.cache import CorpusNotFetchedError, is_fetched, verify
from sparse_tutorial.data.fetch import STALE_STAGING_SECONDS, FetchError, store
from sparse_tutorial.data.text import Vocabulary

FETCH_MODULE = importlib.import_module("sparse_tutorial.data.fetch")  # the package exports a function fetch


def store_toy(content: bytes = b"hello\n"):
    return store("toy", {"toy.txt": content}, "here", "1.0", "CC0", time.perf_counter())


def fake_ding_fetch(calls: list):
    def fetch_():
        calls.append(1)
        return store("ding", {"de-en": b"x :: y\n"}, "fake", "0", "none", time.perf_counter())

    return fetch_


def _stderr_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_alignments_wheel_is_asked_for_python_3_11_whatever_python_runs(empty_cache, monkeypatch):
    commands = []

    def fake_pip(command, cwd=None):
        commands.append(command)
        wheel = Path(command[command.index("--dest") + 1]) / "bible_alignments-0.4.2-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            for member in bible_alignments.MEMBERS.values():
                archive.writestr(member, "x")
        return ""

    monkeypatch.setattr(FETCH_MODULE, "run_client", fake_pip)
    bible_alignments.fetch()
    command = commands[0]
    assert command[command.index("--python-version") + 1] == "3.11"
    assert is_fetched("bible_alignments")


def test_corrupt_provenance_counts_as_not_fetched_and_is_repaired(empty_cache, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(ding, "fetch", fake_ding_fetch(calls))
    registry.fetch(["ding"], verbose=False)
    (empty_cache / "ding" / "provenance.json").write_bytes(b'{"name": "ding", "sour')  # a half-written file
    with pytest.raises(CorpusNotFetchedError, match=r"provenance.json is unreadable .*fetch ding"):
        verify("ding")
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert "ding             not fetched" in listed and "provenance.json is unreadable" in listed
    assert main(["fetch", "ding"]) == 0  # no --force needed
    assert len(calls) == 2 and is_fetched("ding")


@pytest.mark.parametrize("record", [b"[1, 2]", b'{"name": "ding"}', b'{"files": {}, "colour": "red"}', b"\xff\xfe"])
def test_provenance_that_is_not_a_record_counts_as_not_fetched(empty_cache, record):
    store_toy()
    (empty_cache / "toy" / "provenance.json").write_bytes(record)
    assert not is_fetched("toy")


def test_unwritable_cache_fails_before_downloading(tmp_path, monkeypatch, capsys):
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("")
    monkeypatch.setenv("SPARSE_TUTORIAL_CACHE", str(a_file / "cache"))
    calls = []
    monkeypatch.setattr(ding, "fetch", fake_ding_fetch(calls))
    assert main(["fetch", "ding"]) == 2
    assert "the corpus cache ($SPARSE_TUTORIAL_CACHE chooses another): cannot write in" in _stderr_line(capsys)
    assert calls == []


def test_fetch_failure_ends_with_one_line(empty_cache, monkeypatch, capsys):
    def failing():
        raise FetchError("`apt-get download trans-de-en` failed with exit status 100:\nE: no such package")

    monkeypatch.setattr(ding, "fetch", failing)
    assert main(["fetch", "ding"]) == 2
    assert _stderr_line(capsys).endswith("exit status 100: E: no such package")


def test_unknown_corpus_is_a_usage_error(empty_cache, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["fetch", "ding", "wmt14"])
    assert caught.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("unknown corpus 'wmt14'; known corpora: "
                                                                    "apt_descriptions, bible, bible_alignments, "
                                                                    "ding, newsgroups, rotten_tomatoes, yeast")


def test_staging_folders_of_killed_fetches_are_removed(empty_cache):
    empty_cache.mkdir()
    killed, running = empty_cache / ".toy-killed", empty_cache / ".toy-running"
    for folder in (killed, running):
        folder.mkdir()
        (folder / "toy.txt").write_bytes(b"half")
    long_ago = time.time() - STALE_STAGING_SECONDS - 60
    os.utime(killed, (long_ago, long_ago))
    store_toy()
    assert not killed.exists() and running.exists()  # a fresh one may belong to a fetch still running
    assert sorted(p.name for p in empty_cache.iterdir()) == [".toy-running", "toy"]


def test_disk_full_while_storing_keeps_the_cached_corpus(empty_cache, fill_disk_mid_write):
    store_toy(b"old\n")
    fill_disk_mid_write()
    with pytest.raises(OSError, match="No space left"):
        store_toy(b"new " * 1000)
    assert (empty_cache / "toy" / "toy.txt").read_bytes() == b"old\n" and is_fetched("toy")
    assert [p.name for p in empty_cache.iterdir()] == ["toy"]


def test_failed_swap_puts_the_old_corpus_back(empty_cache, monkeypatch):
    store_toy(b"old\n")
    original_rename = Path.rename

    def rename(self, target):
        if self.name.startswith(".toy-") and "-old-" not in self.name:
            raise OSError("rename of the new folder failed")
        return original_rename(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    with pytest.raises(OSError, match="rename of the new folder failed"):
        store_toy(b"new\n")
    assert (empty_cache / "toy" / "toy.txt").read_bytes() == b"old\n" and is_fetched("toy")
    assert [p.name for p in empty_cache.iterdir()] == ["toy"]


def test_vocabulary_save_survives_a_full_disk(tmp_path, fill_disk_mid_write):
    path = tmp_path / "vocab.json"
    Vocabulary.build([["a", "b"]], min_freq=1).save(path)
    fill_disk_mid_write()
    with pytest.raises(OSError):
        Vocabulary.build([[f"w{i}" for i in range(2000)]], min_freq=1).save(path)
    assert len(Vocabulary.load(path)) == len(Vocabulary.build([["a", "b"]], min_freq=1))
