"""Tests of the corpus parsers on hand-written fixtures (tests/fixtures/), the cache, provenance and errors."""
import gzip
import json
import time
from pathlib import Path

import pytest
import torch

from sparse_tutorial.data import (
    apt_descriptions, bible, bible_alignments, debian, ding, newsgroups, registry, rotten_tomatoes, yeast)
from sparse_tutorial.data.__main__ import main
from sparse_tutorial.data.cache import CorpusNotFetchedError, Provenance, cache_dir, is_fetched, verify
from sparse_tutorial.data.corpus import EmptyCorpusError, ParseReport, shuffled_sources, split_by_hash
from sparse_tutorial.data.fetch import FetchError, store

FIXTURES = Path(__file__).parent / "fixtures"


def test_ding_fixture_pairs_filters_and_malformed_lines(capsys):
    corpus = ding.load(path=FIXTURES / "ding_de-en.txt")
    pairs = corpus.train + corpus.dev + corpus.test
    assert [(p.source, p.target) for p in pairs] == [
        ("Das Haus ist sehr alt.", "The house is very old."),
        ("Wollen wir zusammen zu Abend essen?", "Would you like to have dinner with me?"),
        ("So haben wir nicht gewettet!", "That’s not part of the bargain!"),
        ("Noch ist nicht alles verloren.", "It is not over yet."),
        ("Wenn du weißt, was ich meine, und so weiter.", "If you know what I mean, and so on."),
    ]
    report = corpus.report
    assert (report.records, report.kept, report.malformed, report.malformed_lines) == (10, 5, 2, [11, 12])
    assert report.filtered == {"repeated German sentence": 1, "spaced / alternatives": 1}
    assert "2 malformed" in capsys.readouterr().out


def test_ding_clean_entry():
    assert ding.clean_entry("Aal {m} (auf der Speisekarte) [cook.]; Fisch") == "Aal"
    assert ding.clean_entry("a good/bad deal") == "a good deal"
    assert ding.is_sentence("Das ist gut so.") and not ding.is_sentence("Das ist gut.")


def test_rotten_tomatoes_fixture_labels_and_neutral_rule():
    corpus = rotten_tomatoes.load(path=FIXTURES / "rotten_tomatoes_ground_truth.txt", verbose=False)
    examples = sorted(corpus.train + corpus.dev + corpus.test, key=lambda e: e.id)
    assert [(e.id, e.label, e.score) for e in examples] == [("1", 1, 2.5), ("2", 0, -1.75), ("6", 0, -3.1)]
    assert examples[0].text == "A gorgeous, witty film that doesn't miss."
    assert corpus.labels == ["negative", "positive"]
    assert (corpus.report.malformed, corpus.report.malformed_lines) == (2, [4, 5])
    assert corpus.report.filtered == {"neutral (mean rating 0)": 1}


def test_yeast_fixture_features_labels_and_malformed_rows(tmp_path):
    corpus = yeast.load(path=FIXTURES / "yeast.csv", verbose=False)
    assert corpus.labels == [f"Class{i}" for i in range(1, 15)]
    assert (corpus.report.records, corpus.report.kept, corpus.report.malformed) == (6, 3, 3)
    assert corpus.report.malformed_lines == [5, 6, 7]
    features, labels = yeast.stack(sorted(corpus.train + corpus.dev + corpus.test, key=lambda e: e.row))
    assert features.shape == (3, 103) and features.dtype == torch.float32
    assert labels.dtype == torch.bool and labels.sum(dim=1).tolist() == [2, 1, 5]
    gzipped = tmp_path / "yeast.csv.gz"
    gzipped.write_bytes(gzip.compress((FIXTURES / "yeast.csv").read_bytes()))
    assert yeast.load(path=gzipped, verbose=False).report.kept == 3


def test_empty_results_raise(tmp_path):
    (tmp_path / "empty.txt").write_text("# only a comment\n", encoding="utf-8")
    with pytest.raises(EmptyCorpusError, match="no examples"):
        ding.load(path=tmp_path / "empty.txt")
    with pytest.raises(EmptyCorpusError, match="1 malformed"):
        (tmp_path / "bad.txt").write_text("no tabs here\n", encoding="utf-8")
        rotten_tomatoes.load(path=tmp_path / "bad.txt")


def test_split_by_hash_sizes_disjoint_and_deterministic():
    items = [f"sentence {i}" for i in range(1000)]
    train, dev, test = split_by_hash(items, key=str, seed=0)
    assert (len(train), len(dev), len(test)) == (800, 100, 100)
    assert set(train) | set(dev) | set(test) == set(items) and not set(dev) & set(test)
    assert split_by_hash(items, key=str, seed=0) == (train, dev, test)
    assert split_by_hash(items, key=str, seed=1)[2] != test
    # An example's split depends only on its own key: removing others never moves it to another split.
    _, _, test_of_fewer = split_by_hash(items[:500] + items[501:], key=str, seed=0, test_fraction=0.1)
    assert len(set(test_of_fewer) ^ set(test)) <= 4
    with pytest.raises(ValueError, match="dev_fraction"):
        split_by_hash(items, key=str, dev_fraction=0.6, test_fraction=0.5)


def test_shuffled_sources_is_a_seeded_derangement():
    for n in (2, 3, 10, 101):
        sources = [f"verse {i}" for i in range(n)]
        for seed in range(5):
            shuffled = shuffled_sources(sources, seed)
            assert sorted(shuffled) == sorted(sources)  # a permutation
            assert all(a != b for a, b in zip(shuffled, sources))  # nobody keeps its own
            assert shuffled_sources(sources, seed) == shuffled  # deterministic
    assert shuffled_sources(["a", "b"], 0) == ["b", "a"]
    many = [str(i) for i in range(50)]
    assert shuffled_sources(many, 0) != shuffled_sources(many, 1)
    assert shuffled_sources(tuple(many), 0) == shuffled_sources(many, 0)  # any sequence, a list back
    for too_few in ([], ["only"]):
        with pytest.raises(ValueError, match=f"at least 2 items.*got {len(too_few)}"):
            shuffled_sources(too_few, 0)


def test_missing_corpus_error_names_the_fetch_command(empty_cache):
    assert cache_dir() == empty_cache
    for name in registry.CORPORA:
        with pytest.raises(CorpusNotFetchedError, match=f"python -m sparse_tutorial.data fetch {name}"):
            registry.load(name)
    with pytest.raises(KeyError, match="unknown corpus"):
        registry.load("wmt14")


def test_store_verify_and_tampering(empty_cache):
    provenance = store("toy", {"toy.txt": b"hello\n"}, "here · nowhere", "1.0", "CC0", time.perf_counter())
    assert provenance.files == {"toy.txt": "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"}
    assert verify("toy") == Provenance.read(empty_cache / "toy")
    assert "sha256:5891b5b522d5" in provenance.line() and "license CC0" in provenance.line()
    (empty_cache / "toy" / "toy.txt").write_bytes(b"changed\n")
    with pytest.raises(CorpusNotFetchedError, match="SHA-256.*fetch toy --force"):
        verify("toy")
    (empty_cache / "toy" / "toy.txt").unlink()
    assert not is_fetched("toy")


def test_fetch_skips_cached_corpora(empty_cache, monkeypatch, capsys):
    calls = []

    def fake_fetch():
        calls.append(1)
        return store("ding", {"de-en": b"x :: y\n"}, "fake", "0", "none", time.perf_counter())

    monkeypatch.setattr(ding, "fetch", fake_fetch)
    assert main(["fetch", "ding"]) == 0
    assert main(["fetch", "ding"]) == 0
    assert len(calls) == 1 and "cached and verified, skipped" in capsys.readouterr().out
    registry.fetch(["ding"], force=True, verbose=False)
    assert len(calls) == 2
    assert json.loads((empty_cache / "ding" / "provenance.json").read_text())["source"] == "fake"
    with pytest.raises(SystemExit, match="2"):
        main(["fetch", "nonexistent"])


def test_fetch_tries_every_corpus_and_names_the_failures(empty_cache, monkeypatch):
    def failing_fetch():
        raise FetchError("no apt here")

    def fake_yeast_fetch():
        return store("yeast", {"yeast.csv.gz": b"x"}, "fake", "0", "none", time.perf_counter())

    monkeypatch.setattr(apt_descriptions, "fetch", failing_fetch)
    monkeypatch.setattr(yeast, "fetch", fake_yeast_fetch)
    with pytest.raises(FetchError, match=r"could not fetch \['apt_descriptions'\].*no apt here"):
        registry.fetch(["apt_descriptions", "yeast"], verbose=False)
    assert is_fetched("yeast")


def test_parse_report_line():
    report = ParseReport(records=3, kept=1)
    report.bad(2)
    report.filtered["too short"] += 1
    assert report.line() == "3 records, 1 kept, 1 malformed (first at lines [2]), filtered: 1 too short"


def test_newsgroups_fixture_subset_labels_and_malformed_lines():
    corpus = newsgroups.load("hockey-vs-baseball", directory=FIXTURES / "newsgroups", verbose=False)
    assert corpus.labels == ["rec.sport.baseball", "rec.sport.hockey"]
    train = sorted(corpus.train + corpus.dev, key=lambda e: int(e.id.split(":")[1]))
    assert [(e.id, e.label) for e in train] == [("train:4", 1), ("train:5", 0), ("train:10", 1)]
    assert [(e.text, e.label) for e in corpus.test] == [("the pitcher threw a perfect game", 0)]
    report = corpus.report
    assert (report.records, report.kept, report.malformed, report.malformed_lines) == (8, 4, 2, [7, 8])
    assert report.filtered == {"other newsgroups": 2}
    assert newsgroups.load(["sci.med"], directory=FIXTURES / "newsgroups", verbose=False).report.kept == 1
    with pytest.raises(ValueError, match="categories"):
        newsgroups.load(["rec.sport.curling"], directory=FIXTURES / "newsgroups")
    with pytest.raises(EmptyCorpusError):
        newsgroups.load(["talk.religion.misc"], directory=FIXTURES / "newsgroups")


def test_bible_fixture_cleaning_references_and_empty_verses():
    corpus = bible.load(path=FIXTURES / "bible.tsv", verbose=False)
    verses = {v.verse: v for v in corpus.train + corpus.dev + corpus.test}
    assert sorted(verses) == ["1.1.1", "40.5.44"]
    assert verses["40.5.44"].source == "Liebet eure Feinde, segnet, die euch fluchen."
    assert verses["40.5.44"].targets[0] == "Love your enemies and bless them."
    assert len(verses["1.1.1"].targets) == 3 and verses["1.1.1"].target.startswith("In the beginning")
    report = corpus.report
    assert (report.records, report.kept, report.malformed, report.malformed_lines) == (5, 2, 2, [5, 6])
    assert report.filtered == {"verse empty in bbe": 1}
    schlachter = bible.load(german="schlachter", path=FIXTURES / "bible.tsv", verbose=False)
    assert {v.source for v in schlachter.train + schlachter.dev + schlachter.test} == {
        "Im Anfang schuf Gott den Himmel und die Erde.", "Liebet eure Feinde."}
    assert bible.clean_verse("(32:1) Und  Laban [stand] auf.") == "Und Laban stand auf."
    with pytest.raises(ValueError, match="german"):
        bible.load(german="luther", path=FIXTURES / "bible.tsv")


def test_bible_alignments_fixture_links_exclusions_and_malformed_records():
    corpus = bible_alignments.load(directory=FIXTURES / "bible_alignments", verbose=False)
    verses = {v.verse: v for v in corpus.train + corpus.dev + corpus.test}
    first, second = verses["40001001"], verses["40001002"]
    assert first.source_tokens == ["Βίβλος", "γενέσεως", "Ἰησοῦ"]
    assert first.target_tokens == ["This", "is", "the", "book", "of", "the", "genealogy", "of", "Jesus"]
    assert first.sure == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (1, 6), (2, 7), (2, 8)]
    assert second.sure == [(0, 0), (1, 1), (1, 2), (1, 3)] and second.possible == second.sure
    report = corpus.report
    assert (report.records, report.kept, report.malformed, report.malformed_lines) == (8, 2, 3, [6, 7, 8])
    assert report.filtered == {"links to excluded (punctuation) words": 1, "links across verses": 1}


def test_apt_stanzas_and_long_description():
    with open(FIXTURES / "apt_Translation-en.txt", encoding="utf-8") as handle:
        parsed = list(apt_descriptions.stanzas(handle))
    assert [start for start, _ in parsed] == [1, 9]
    first = parsed[0][1]
    assert first["Package"] == "tinyfoo" and first["Description-en"].split("\n")[0] == \
        "small example tool for the test suite"
    assert apt_descriptions.long_description(first["Description-en"]) == (
        "Tinyfoo is a made-up program written for the tests of this book. It reads nothing and writes nothing. "
        "This package contains the command line tool.")
    assert parsed[1][1]["_malformed"] == "this line is neither a field nor a continuation"


def test_apt_descriptions_fixture_pairs_filters_and_malformed_records():
    corpus = apt_descriptions.load(path=FIXTURES / "apt_descriptions.jsonl", verbose=False)
    pairs = sorted(corpus.train + corpus.dev + corpus.test, key=lambda p: p.package)
    assert [(p.package, p.summary) for p in pairs] == [
        ("tinyfoo", "small example tool for the test suite"), ("tinyfoo-gui", "graphical front end for tinyfoo")]
    report = corpus.report
    assert (report.records, report.kept, report.malformed, report.malformed_lines) == (7, 2, 2, [5, 6])
    assert report.filtered == {"description under 10 words": 1, "synopsis under 2 words": 1,
                               "same description and synopsis as another package": 1}


def test_apt_descriptions_without_apt_says_so(monkeypatch):
    monkeypatch.setattr(debian, "APT_HELPER", "/nonexistent/apt-helper")
    with pytest.raises(FetchError, match="need apt"):
        apt_descriptions.fetch()
