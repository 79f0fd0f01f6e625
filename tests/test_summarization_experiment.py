"""End-to-end checks of sparse_tutorial.experiments.summarization on a toy corpus (no download needed):
extended-vocabulary batches, a tiny training run of two Table V systems, the metrics' ranges and the copy
highlighting; the experiment's grid of runs and the results assembled from them."""
import dataclasses
import math

import pytest
import torch

from sparse_tutorial.experiments import summarization as S
from sparse_tutorial.runs.sweep import run_sweep

PAIRS = [
    ("zorblax is a tool for fast file sync . it copies files .", "fast file sync tool zorblax"),
    ("quuxlib provides a library for parsing json . it is small .", "json parsing library quuxlib"),
    ("blimpd is a daemon for network time . it runs in the background .", "network time daemon blimpd"),
    ("frobnicate is a tool for image resizing . it is quick .", "image resizing tool frobnicate"),
] * 6

SIZES = dataclasses.replace(S.SIZES["quick"], n_train=16, n_dev=4, n_test=4, vocab_size=30, embedding_dim=8,
                            hidden_dim=8, epochs=1, batch_size=4, systems=("ABS", "ABS+Pointer"))


@pytest.fixture(scope="module")
def data():
    return S.build_data(PAIRS, PAIRS, PAIRS, SIZES, corpus={"name": "toy"})


def test_batches_use_extended_ids_for_source_oovs(data):
    batch = S.make_batch(data.test[:2], data.vocab)
    vocab_size = len(data.vocab)
    assert batch.n_extended == vocab_size + max(len(oovs) for oovs in batch.oovs)
    for row, oovs in enumerate(batch.oovs):
        extended = batch.source_extended[row][batch.source_mask[row]]
        plain = batch.source[row][batch.source_mask[row]]
        assert ((extended >= vocab_size) == (plain == data.vocab.unk_id)).all()
        # a reference word that is a source OOV is a copy target, never <unk>
        for token, target_id in zip(data.test[row].target, batch.target[row].tolist()):
            if token in oovs:
                assert target_id == vocab_size + oovs.index(token)
    assert (batch.target_input[:, 0] == data.vocab.bos_id).all()
    assert torch.equal(batch.target_input[:, 1:], batch.target[:, :-1])


@pytest.mark.parametrize("name", ["ABS", "ABS+Pointer+Cov+Ent (λ=0.02)"])
def test_a_system_trains_and_is_evaluated(data, name):
    result = S.run_system(S.SYSTEMS[name], data, SIZES, seed=0)
    metrics = result.metrics
    for key in ("rouge1", "rouge2", "rougeL", "rougeLsum", "unk_percent", "repeated_bigrams_percent",
                "copy_percent"):
        assert 0 <= metrics[key] <= 100
    assert metrics["entropy_per_token"] > 0
    assert len(result.summaries) == len(data.test)
    for summary in result.summaries:
        assert summary.attention.shape[0] == len(summary.tokens) == summary.p_gen.shape[0]
    if name == "ABS":
        assert metrics["copy_percent"] == 0  # no switch: p_gen is 1 everywhere


def test_run_system_takes_a_reader_loss(data):
    """``run_system(..., loss_fn=...)`` trains with the reader's loss instead of the system's."""
    calls = []

    def my_loss(model, batch):
        calls.append(batch)
        return S.batch_loss(model, batch, S.System(pointer=True, entropy_weight=0.5))

    result = S.run_system(S.SYSTEMS["ABS+Pointer"], data, SIZES, seed=0, loss_fn=my_loss)
    assert len(calls) == len(result.history.steps) > 0
    assert all(isinstance(batch, S.SummaryBatch) for batch in calls)


def test_run_system_names_a_system_given_by_name(data):
    with pytest.raises(TypeError, match="must be a System"):
        S.run_system("ABS", data, SIZES)


def test_highlight_bolds_copied_source_words():
    summary = S.Summary(["fast", "zorblax", "tool"], torch.zeros(3, 2), torch.tensor([0.9, 0.1, 0.2]))
    source = ["zorblax", "is", "fast"]
    assert S.copied_mask(summary, source) == [False, True, False]  # "tool" is not in the source
    assert S.highlight_copies(summary, source) == "fast **zorblax** tool"


def test_lead_baselines_score_the_first_sentences(data):
    scores = S.lead_baselines(data.test)
    assert set(scores) == {"Lead-1", "Lead-3"}
    assert all(0 < value <= 100 for value in scores["Lead-1"].values())


def test_grid_trains_the_headline_systems_with_every_seed(monkeypatch):
    monkeypatch.setattr(S, "load_data", lambda sizes: None)
    sizes = S.SIZES["medium"]
    runs = S.grid("medium", seeds=3)
    assert [(run["name"], run["seed"]) for run in runs] == [
        (name, seed) for name in sizes.systems for seed in range(3 if name in sizes.headline else 1)]
    assert len(runs) == 3 * len(S.SYSTEMS)  # the stored run trains every system with every seed
    assert {run.kind for run in runs} == {"system"} and all(run["profile"] == "medium" for run in runs)
    assert len({run.key for run in runs}) == len(runs)


def test_the_pilots_grid_trains_its_designs_fresh_seeds_after_its_own(monkeypatch):
    monkeypatch.setattr(S, "load_data", lambda sizes: None)
    fresh = S.design.CONFIRMATORY.fresh_runs()
    pilot = S.grid("medium", seeds=5)
    assert pilot[-len(fresh):] == fresh and len(pilot) == 5 * len(S.SYSTEMS) + len(fresh) == len(set(pilot))
    assert pilot[:-len(fresh)] == [run for run in S.grid("medium", seeds=15) if run["seed"] < 5]
    assert {run["seed"] for run in S.grid("quick", seeds=5)} == {0}   # not the pilot's grid


def test_assembled_results_have_the_runs_of_every_system(monkeypatch, data, one_thread):
    """The shape chapter 11 reads, with the building blocks' numbers; a NaN metric (``None`` as stored)
    makes its mean NaN rather than failing."""
    monkeypatch.setitem(S.SIZES, "quick", dataclasses.replace(SIZES, headline=("ABS",)))
    monkeypatch.setattr(S, "load_data", lambda sizes: data)
    runs = S.grid("quick", seeds=2)
    stored = run_sweep(runs, S.execute, threads_per_run=1, progress=False)
    results = S.assemble("quick", 2, runs, stored)
    assert list(results) == ["corpus", "sizes", "hardware", "device", "systems", "lead", "examples", "checks"]
    assert results["checks"]["seeds"] == 1 and results["checks"]["n_test"] == len(data.test)
    # the pointer model ran with one seed here: its claims are not tested (the standard asks for 3 an arm)
    assert results["checks"]["claims"]["the pointer improves over ABS"]["verdict"] == "not tested"
    assert "ABS+Pointer" in results["checks"]["mechanism"]
    assert results["corpus"] == {"name": "toy"} and results["lead"].keys() == {"Lead-1", "Lead-3"}
    systems = results["systems"]
    assert list(systems) == ["ABS", "ABS+Pointer"]
    assert [[run["seed"] for run in systems[name]["runs"]] for name in systems] == [[0, 1], [0]]
    direct = [S.run_system(S.SYSTEMS["ABS"], data, SIZES, seed=seed) for seed in (0, 1)]  # as chapter 11 trains them
    assert [{key: value for key, value in run.items() if key != "train_and_eval_seconds"}
            for run in systems["ABS"]["runs"]] == [
        {"seed": seed, **S.rounded(result.metrics), "best_epoch": result.history.best_epoch}
        for seed, result in enumerate(direct)]
    assert list(systems["ABS"]["mean"]) == [*direct[0].metrics, "train_and_eval_seconds"]
    assert set(systems["ABS+Pointer"]["std"].values()) == {0.0}  # one seed
    assert [example["reference"] for example in results["examples"]] == [ex.summary for ex in data.test]
    assert [example["summaries"]["ABS"] for example in results["examples"]] == [
        S.highlight_copies(summary, example.source) for summary, example in zip(direct[0].summaries, data.test)]

    stored[1]["metrics"]["rouge1"] = None  # ABS, seed 1
    assert math.isnan(S.assemble("quick", 2, runs, stored)["systems"]["ABS"]["mean"]["rouge1"])
