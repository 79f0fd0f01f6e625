"""Real-data tests: the documented counts and split sizes of every corpus (book/appendix/data.md).

Each test is skipped, with the fetch command in the reason, when its corpus is not in the cache;
`make test` runs `make data` first, so CI checks them all.
"""
import pytest

from sparse_tutorial.data import registry
from sparse_tutorial.data.cache import fetch_command, is_fetched
from sparse_tutorial.data.text import label_token_counts, tokenize
from sparse_tutorial.data.yeast import stack


def fetched(name):
    if not is_fetched(name):
        pytest.skip(f"corpus {name!r} is not fetched (run: {fetch_command(name)})")
    return registry.load(name, verbose=False)


def test_ding_counts_and_splits():
    corpus = fetched("ding")
    assert (corpus.report.records, corpus.report.malformed, corpus.report.kept) == (206233, 0, 17612)
    assert corpus.sizes() == {"train": 14090, "dev": 1761, "test": 1761}
    assert all(p.source[-1] in ".!?" and len(p.target.split()) >= 4 for p in corpus.test)


def test_rotten_tomatoes_counts_splits_and_label_counts():
    corpus = fetched("rotten_tomatoes")
    assert (corpus.report.records, corpus.report.malformed, corpus.report.kept) == (10605, 0, 10568)
    assert corpus.report.filtered == {"neutral (mean rating 0)": 37}
    assert corpus.sizes() == {"train": 8454, "dev": 1057, "test": 1057}
    assert sum(e.label for e in corpus.train + corpus.dev + corpus.test) == 5242
    counts = label_token_counts([tokenize(e.text) for e in corpus.train], [e.label for e in corpus.train], 2)
    assert counts["worst"][0] > 3 * counts["worst"][1] and counts["beautifully"][1] > 3 * counts["beautifully"][0]


def test_yeast_counts_and_splits():
    corpus = fetched("yeast")
    assert (corpus.report.records, corpus.report.kept) == (2417, 2417)
    assert corpus.sizes() == {"train": 1933, "dev": 242, "test": 242}
    features, labels = stack(corpus.train + corpus.dev + corpus.test)
    assert features.shape == (2417, 103) and labels.shape == (2417, 14)
    assert round(labels.sum().item() / 2417, 2) == 4.24  # the label cardinality reported for yeast


def test_newsgroups_counts_splits_and_subsets():
    corpus = fetched("newsgroups")
    assert (corpus.report.records, corpus.report.malformed, corpus.report.kept) == (18821, 0, 18821)
    assert corpus.sizes() == {"train": 10164, "dev": 1129, "test": 7528} and len(corpus.labels) == 20
    hockey = registry.load("newsgroups", categories="hockey-vs-baseball", verbose=False)
    assert hockey.sizes() == {"train": 1077, "dev": 120, "test": 796}
    three = registry.load("newsgroups", categories="motorcycles-med-guns", verbose=False)
    assert three.sizes() == {"train": 1563, "dev": 174, "test": 1158}


def test_bible_counts_splits_and_references():
    corpus = fetched("bible")
    assert (corpus.report.records, corpus.report.malformed, corpus.report.kept) == (31102, 0, 31083)
    assert corpus.report.filtered == {"verse empty in bbe": 19}
    assert corpus.sizes() == {"train": 24867, "dev": 3108, "test": 3108}
    genesis = next(v for v in corpus.train + corpus.dev + corpus.test if v.verse == "1.1.1")
    assert genesis.source == "Im Anfang schuf Gott die Himmel und die Erde."
    assert genesis.targets == ("In the beginning God created the heavens and the earth.",
                               "In the beginning God created the heaven and the earth.",
                               "At the first God made the heaven and the earth.")


def test_bible_alignments_counts_and_splits():
    corpus = fetched("bible_alignments")
    assert (corpus.report.records, corpus.report.malformed, corpus.report.kept) == (115008, 0, 7919)
    assert corpus.sizes() == {"train": 6335, "dev": 792, "test": 792}
    verses = corpus.train + corpus.dev + corpus.test
    assert all(v.possible == v.sure for v in verses)
    assert all(i < len(v.source_tokens) and j < len(v.target_tokens) for v in verses for i, j in v.sure)


def test_apt_descriptions_counts_and_splits():
    corpus = fetched("apt_descriptions")
    pairs = corpus.train + corpus.dev + corpus.test
    assert corpus.report.malformed == 0 and all(p.summary and p.document for p in pairs)
    assert len({p.document for p in corpus.test} & {p.document for p in corpus.train}) == 0
    assert (corpus.report.records, corpus.report.kept) == (63956, 60587)  # the pinned Debian 12.15 main
    assert corpus.sizes() == {"train": 48469, "dev": 6059, "test": 6059}
