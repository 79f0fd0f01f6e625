"""Every corpus is pinned bytes: a fetch that builds other bytes stores nothing, a cached corpus that is not
the pinned one is not loaded, the results files were made on the pins, and the apt corpora are the same
whatever the machine's own apt configuration (the last needs apt and the Debian archive: skipped without)."""
import json
import re
import time
from pathlib import Path

import pytest

from sparse_tutorial.data import apt_descriptions, debian, pins, registry
from sparse_tutorial.data.cache import CorpusNotFetchedError, sha256_file, verify
from sparse_tutorial.data.fetch import FetchError, store

RESULTS = Path(__file__).resolve().parents[1] / "book" / "results"
HAS_APT = Path(debian.APT_HELPER).exists()


@pytest.fixture
def pinned_cache(tmp_path, monkeypatch):
    """An empty cache where the corpus ``toy`` is pinned to ``b"pinned\\n"``."""
    monkeypatch.setenv("SPARSE_TUTORIAL_CACHE", str(tmp_path / "cache"))
    (tmp_path / "pinned.txt").write_bytes(b"pinned\n")
    monkeypatch.setitem(pins.PINNED, "toy", {"toy.txt": sha256_file(tmp_path / "pinned.txt")})
    return tmp_path / "cache"


def store_toy(content: bytes):
    return store("toy", {"toy.txt": content}, "a registry", "1.0", "CC0", time.perf_counter())


def test_every_corpus_of_the_book_is_pinned():
    assert set(pins.PINNED) == set(registry.CORPORA)
    assert all(re.fullmatch("[0-9a-f]{64}", digest) for files in pins.PINNED.values() for digest in files.values())


def test_a_fetch_of_other_bytes_stores_nothing_and_names_both_hashes(pinned_cache):
    store_toy(b"pinned\n")
    with pytest.raises(FetchError) as error:
        store_toy(b"drifted\n")
    message = str(error.value)
    assert "corpus 'toy' is not the pinned one" in message and "nothing was stored" in message
    assert pins.PINNED["toy"]["toy.txt"] in message and "Bumping a corpus" in message
    assert (pinned_cache / "toy" / "toy.txt").read_bytes() == b"pinned\n"  # the cached corpus is kept
    assert not list(pinned_cache.glob(".toy-*"))  # and no staging folder is left


def test_a_cached_corpus_that_is_not_the_pinned_one_is_not_loaded(pinned_cache, monkeypatch):
    """A machine that fetched before the pins (the drifted apt corpus) must fetch again, not load it."""
    store_toy(b"pinned\n")
    monkeypatch.setitem(pins.PINNED, "toy", {"toy.txt": "0" * 64})  # the pin moved on
    with pytest.raises(CorpusNotFetchedError, match=r"not the pinned one .*fetch toy --force"):
        verify("toy")


def test_an_unpinned_corpus_cannot_be_stored(pinned_cache):
    with pytest.raises(FetchError, match="corpus 'unknown' has no pinned hashes"):
        store("unknown", {"a.txt": b"a"}, "here", "1.0", "CC0", time.perf_counter())


def recorded_hashes(value) -> list[tuple[str, str]]:
    """``(file name, SHA-256 or its first 12 digits)`` of every corpus file a results file's ``corpus`` names:
    provenance records (``"files": {name: hash}``) and provenance lines (``name sha256:0123456789ab``)."""
    text = json.dumps(value, ensure_ascii=False)
    return (re.findall(r'"([^"]+)": "([0-9a-f]{64})"', text)
            + re.findall(r"([\w.-]+) sha256:([0-9a-f]{12,64})", text))


@pytest.mark.parametrize("name", ["nmt", "alignment", "summarization", "classification", "interpretability",
                                  "explanation"])
def test_the_stored_results_were_made_on_the_pinned_corpora(name):
    results = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    hashes = recorded_hashes(results["corpus"])
    assert hashes, f"{name}.json records no corpus hash"
    pinned = {file: digest for files in pins.PINNED.values() for file, digest in files.items()}
    for file, digest in hashes:
        assert file in pinned and pinned[file].startswith(digest), (
            f"{name}.json was made on {file} sha256 {digest}, pinned {pinned.get(file)}")


UBUNTU_STYLE = """\
Dir::Etc::SourceList "{folder}/sources.list";
Dir::Etc::SourceParts "{folder}/sources.list.d";
Dir::Etc::Parts "{folder}/apt.conf.d";
Acquire::Languages "none";
Acquire::GzipIndexes "false";
"""


@pytest.mark.skipif(not HAS_APT, reason="needs apt (Debian or Ubuntu)")
def test_the_apt_corpus_is_the_pinned_one_under_an_ubuntu_style_configuration(tmp_path, monkeypatch):
    """The host's apt configuration (here Ubuntu's sources, no English descriptions, no Debian archive key)
    does not reach the fetch: it builds the pinned corpus."""
    host = tmp_path / "host"
    (host / "sources.list.d").mkdir(parents=True)
    (host / "apt.conf.d").mkdir()
    (host / "sources.list").write_text("deb file:/nonexistent/ubuntu jammy main restricted universe\n")
    (host / "apt.conf.d" / "docker-no-languages").write_text('Acquire::Languages "none";\n')
    (host / "apt.conf").write_text(UBUNTU_STYLE.format(folder=host))
    monkeypatch.setenv("APT_CONFIG", str(host / "apt.conf"))
    monkeypatch.setattr(debian, "KEYRING", tmp_path / "no-debian-archive-keyring.gpg")
    monkeypatch.setenv("SPARSE_TUTORIAL_CACHE", str(tmp_path / "cache"))
    provenance = apt_descriptions.fetch()
    assert provenance.files == pins.PINNED["apt_descriptions"]
    assert provenance.notes["release"]["Version"] == debian.POINT_RELEASE == provenance.version


@pytest.mark.skipif(not HAS_APT, reason="needs apt (Debian or Ubuntu)")
def test_an_archive_past_its_point_release_is_an_error_that_says_what_to_do(monkeypatch):
    monkeypatch.setattr(debian, "POINT_RELEASE", "12.99")
    with pytest.raises(FetchError, match=r"is now at point release '12.15'.*pinned to 12.99.*Bumping a corpus"):
        with debian.DebianArchive():
            pass
