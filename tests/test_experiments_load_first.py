"""Findings 2 and 12 of issue 19: an experiment loads every corpus it needs before it trains anything, so a
missing corpus fails in seconds, not after an hour of training."""
import pytest

from sparse_tutorial.data.cache import CorpusNotFetchedError
from sparse_tutorial.experiments import alignment, classification, explanation, nmt, summarization
from sparse_tutorial.experiments.classification import data as classification_data
def no_training(*args, **kwargs):
    raise AssertionError("training started before every corpus was loaded")


@pytest.fixture
def empty_task_cache():
    """classification's task cache, empty before the test and after (so it keeps no stand-in task)."""
    classification.cached_task.cache_clear()
    yield
    classification.cached_task.cache_clear()


@pytest.mark.parametrize("module, trainer, corpus", [(nmt, "train_system", "bible"),
                                                      (alignment, "run_alignment", "bible_alignments")])
def test_translation_and_alignment_load_their_corpus_in_their_grid(tmp_path, monkeypatch, module, trainer, corpus):
    monkeypatch.setenv("SPARSE_TUTORIAL_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(module, trainer, no_training)
    with pytest.raises(CorpusNotFetchedError, match=f"python -m sparse_tutorial.data fetch {corpus}"):
        module.grid("quick", seeds=1)


def test_classification_loads_every_task_before_training(monkeypatch, empty_task_cache):
    def load_task(corpus, **kwargs):
        if corpus == "newsgroups":
            raise CorpusNotFetchedError("fetch it with: python -m sparse_tutorial.data fetch newsgroups")
        return classification.synthetic_task(train_pairs=2, test_pairs=2)

    monkeypatch.setattr(classification_data, "load_task", load_task)
    monkeypatch.setattr(classification, "fit", no_training)
    with pytest.raises(CorpusNotFetchedError, match="fetch newsgroups"):
        classification.run("full", seeds=1)


@pytest.mark.parametrize("module, loader, trainer, corpus", [
    (summarization, "load_data", "run_system", "apt_descriptions"),
    (explanation, "training_task", "fit", "rotten_tomatoes"),
])
def test_a_sweep_loads_its_corpus_in_its_grid(monkeypatch, module, loader, trainer, corpus):
    def missing(*args, **kwargs):
        raise CorpusNotFetchedError(f"fetch it with: python -m sparse_tutorial.data fetch {corpus}")

    monkeypatch.setattr(module, loader, missing)
    monkeypatch.setattr(module, trainer, no_training)
    with pytest.raises(CorpusNotFetchedError, match=f"fetch {corpus}"):
        module.run("quick", seeds=1)
