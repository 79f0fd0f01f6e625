"""sparse_tutorial.experiments.explanation as a sweep: its grid of runs, and the results assembled from them
on a tiny synthetic task (no download needed) -- the shape chapter 14 reads, with the numbers the chapter's
building blocks give."""
from dataclasses import replace

import pytest

from sparse_tutorial.experiments import explanation as E
from sparse_tutorial.experiments.classification import evaluation_subset, fit, synthetic_task
from sparse_tutorial.runs.runner import sweep_experiment
from sparse_tutorial.runs.sweep import Run, as_stored
from sparse_tutorial.models.classifier import meister_config

TINY = replace(E.SIZES["quick"], n_train=None, epochs=2, embedding_dim=6, hidden_dim=6, n_test=10)
TASK = synthetic_task(num_polar=3, num_neutral=4, length=6, polar_per_doc=1, train_pairs=40, test_pairs=20)


@pytest.fixture
def tiny(monkeypatch, one_thread):
    """The quick profile on TASK with a tiny model, trained fast enough that the seeds' numbers differ."""
    monkeypatch.setitem(E.SIZES, "quick", TINY)
    monkeypatch.setattr(E, "LR", 0.05)
    monkeypatch.setattr(E, "training_task", lambda train: TASK)


def test_grid_has_a_base_and_a_uniform_run_per_seed(monkeypatch):
    monkeypatch.setattr(E, "training_task", lambda train: TASK)
    runs = E.grid("medium", seeds=3)
    assert [(run.kind, run["seed"]) for run in runs] == [(kind, seed) for seed in range(3)
                                                         for kind in ("base", "uniform")]
    assert all(run["profile"] == "medium" for run in runs)
    assert len({run.key for run in runs}) == 6


def test_an_unknown_run_kind_is_named(tiny):
    with pytest.raises(ValueError, match="'frozen'"):
        E.execute(Run.of("frozen", profile="quick", seed=0))


def test_assembled_results_have_one_row_per_seed_with_the_building_blocks_numbers(tiny):
    results = sweep_experiment("explanation", "quick", 2, threads_per_run=1)  # what E.run does, on one thread
    assert list(results) == ["profile_note", "corpus", "evaluation_subset", "erasure", "permutation", "adversarial",
                             "baselines", "checks"]
    subset = results["evaluation_subset"]  # a label-stratified sample, the same for every seed
    assert subset["size"] == TINY.n_test and len(subset["index_sha256"]) == 64
    assert all(abs(subset["label_shares"][k] - subset["split_shares"][k]) <= 0.02 for k in subset["split_shares"])
    assert results["profile_note"] == E.SIZES["quick"].note
    for test in ("erasure", "permutation", "adversarial", "baselines"):
        assert [row["seed"] for row in results[test]] == [0, 1]
    assert results["baselines"][0]["uniform_trained"] != results["baselines"][1]["uniform_trained"]
    assert list(results["baselines"][0]) == ["seed", *E.BASELINES]
    # seed 1 computed directly, as chapter 14 does, gives the same numbers (as stored: a NaN is None)
    config = meister_config("bilstm", TASK.vocab_size, embed_dim=TINY.embedding_dim, hidden_dim=TINY.hidden_dim)
    training = dict(seed=1, epochs=TINY.epochs, lr=E.LR, optimizer=E.OPTIMIZER)
    base = fit(config, TASK, **training)
    evaluation, _ = evaluation_subset(TASK.test, TINY.n_test)
    expected = {"erasure": E.erasure(base.model, evaluation, seed=1),
                "permutation": E.permutation(base.model, evaluation, seed=1),
                "adversarial": E.adversarial(base.model, evaluation),
                "baselines": E.baselines(config, TASK, base, **training)}
    for test, values in expected.items():
        assert results[test][1] == {"seed": 1, **as_stored(values)}


def test_a_loop_over_baseline_models_gives_the_baselines_numbers(one_thread):
    """Chapter 14 trains W&P's models in a visible loop over :func:`baseline_models`: the same accuracies
    as :func:`baselines`, and the adversary's weight reaches its loss."""
    config = meister_config("bilstm", TASK.vocab_size, embed_dim=TINY.embedding_dim, hidden_dim=TINY.hidden_dim)
    training = dict(seed=0, epochs=TINY.epochs, lr=0.05, optimizer=E.OPTIMIZER)
    base = fit(config, TASK, **training)
    trained = {name: fit(config, TASK, **how, **training) for name, how in E.baseline_models(base.model).items()}
    expected = E.baselines(config, TASK, base, **training)
    assert {name: result.test_accuracy for name, result in trained.items()} == {
        name: expected[name] for name in trained}
    stronger = fit(config, TASK, **E.baseline_models(base.model, adversary_weight=50.0)["adversary_trained"],
                   **training)
    assert E.mean_divergence(stronger.model, base.model, TASK.test) != expected["adversary_js_from_base"]


def test_the_checks_judge_the_per_sentence_outcomes_of_every_seed(tiny):
    results = sweep_experiment("explanation", "quick", 3, threads_per_run=1)
    checks = results["checks"]
    assert checks["seeds"] == 3 and checks["n_test_accuracy"] == len(TASK.test.labels)
    assert checks["n_test"] == min(len(TASK.test.labels), TINY.n_test)   # erasure: the evaluated subset
    assert len(checks["claims"]) == 6
    for judged in checks["claims"].values():
        if judged["verdict"] != "not tested":
            assert {"verdict", "kind", "effect", "ci95", "p", "p_holm", "seeds", "margin", "paper", "test",
                    "seed_level"} <= set(judged) and judged["seeds"] == [3, 3]
    # the accuracy claims' effects are the accuracy gaps, averaged over the seeds
    gap = sum(row["learned"] - row["uniform_trained"] for row in results["baselines"]) / 3
    assert checks["claims"]["learned attention is no more accurate than uniform attention"]["effect"] == \
        pytest.approx(gap)
    free_gap = sum(row["encoder_free_frozen"] - row["encoder_free_uniform"] for row in results["baselines"]) / 3
    assert checks["claims"]["without an encoder, the base model's frozen attention beats uniform attention"][
        "effect"] == pytest.approx(free_gap)
    # Jain & Wallace's claim: the share of sentences a far adversarial attention keeps, against one half
    far_share = sum(row["share_js_above_half_max"] for row in results["adversarial"]) / 3
    jain_wallace = checks["claims"]["for most sentences an attention far from the model's keeps its decision"]
    assert jain_wallace["verdict"] == "not tested" or jain_wallace["effect"] <= far_share - 0.5 + 1e-6


def test_per_sentence_correctness_and_flips_average_to_the_reported_rates(one_thread):
    config = meister_config("bilstm", TASK.vocab_size, embed_dim=TINY.embedding_dim, hidden_dim=TINY.hidden_dim)
    base = fit(config, TASK, epochs=2, lr=0.05, optimizer=E.OPTIMIZER)
    uniform = E.uniform_models(config, TASK, seed=0, epochs=2, lr=0.05, optimizer=E.OPTIMIZER)
    for result in (base, *uniform.values()):
        assert sum(E.correct(result, TASK.test)) / len(TASK.test.labels) == pytest.approx(result.test_accuracy)
    assert uniform["encoder_free_uniform"].model.config.encoder == "none"
    flips = E.erasure_flips(base.model, TASK.test)
    assert E.flip_rates(flips) == E.erasure(base.model, TASK.test)
    assert {name: len(flipped) for name, flipped in flips.items()} == dict.fromkeys(
        ("attention", "random", "gradient", "any"), len(TASK.test.labels))
