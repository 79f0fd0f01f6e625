"""Issue 20: the classification and interpretability experiments are grids of independent runs (``grid``,
``execute``, ``assemble``), put together into the JSON the chapters read, with the numbers of the building
blocks the chapters call. Corpora are replaced by tiny in-memory tasks, so these tests need no cache."""
import functools
import math
from dataclasses import replace

import pytest
import torch

from sparse_tutorial.experiments import classification, interpretability

from sparse_tutorial.experiments.classification import data as classification_data
from sparse_tutorial.experiments.classification import Split, Task, fit, lambda_table, synthetic_task
from sparse_tutorial.runs.sweep import Run, as_stored
from sparse_tutorial.interpret import batched_kendall_tau_b
from sparse_tutorial.models.classifier import SUN_LU_VARIANTS, meister_config


def toy_binary_task() -> Task:
    return synthetic_task(num_polar=3, num_neutral=4, length=6, train_pairs=15, test_pairs=10)


def toy_three_class_task() -> Task:
    generator = torch.Generator().manual_seed(0)

    def split(size: int) -> Split:
        ids = torch.randint(1, 13, (size, 6), generator=generator)
        return Split(ids, ids != 0, torch.arange(size) % 3)

    return Task("three", split(30), split(12), split(12), ["<pad>"] + [f"t{i}" for i in range(12)],
                ["a", "b", "c"], "three-class toy")


@pytest.fixture
def toy_corpora(monkeypatch):
    """Every corpus loads as a tiny task: 20News II (three classes) as a three-class one, others binary."""
    def load_task(corpus, categories=None, **kwargs):
        return toy_three_class_task() if categories == "motorcycles-med-guns" else toy_binary_task()

    monkeypatch.setattr(classification_data, "load_task", load_task)
    classification.cached_task.cache_clear()
    yield
    classification.cached_task.cache_clear()


def assert_distinct_system_runs(runs, profile):
    assert {run.kind for run in runs} == {"system"}
    assert {run["profile"] for run in runs} == {profile}
    assert len({run.key for run in runs}) == len(runs)


def test_classification_grid_trains_each_model_once(toy_corpora):
    runs = classification.grid("full", seeds=2)
    # 3 tasks x 4 variants x 7 scales x 2 seeds, plus the VᵀW-regularised DP of the two binary tasks: the
    # token analysis's unregularised models (DP at scales 10 and 100, AD at 10) are the table's
    assert len(runs) == 3 * 4 * 7 * 2 + 2 * 2
    assert_distinct_system_runs(runs, "full")
    assert sum(run["vtw_weight"] == 1.0 for run in runs) == 4
    # quick: 4 variants x 3 scales x 3 seeds, plus DP at scale 100 and DP+VᵀW at scale 10 for each seed
    assert len(classification.grid("quick", seeds=3)) == 4 * 3 * 3 + 2 * 3


def test_classification_medium_grid_trains_every_task_with_every_seed(toy_corpora):
    runs = classification.grid("medium", seeds=3)
    seeds = {task: sorted({run["seed"] for run in runs if run["task"] == task}) for task in classification.TASKS}
    assert seeds == dict.fromkeys(classification.TASKS, [0, 1, 2])   # issue 30: 3 seeds for every judged arm
    # RT and 20News I: 4 variants x 7 scales x 3 seeds + DP+VᵀW per seed; 20News II (3 labels): 28 x 3
    assert len(runs) == 2 * (28 * 3 + 3) + 28 * 3


def test_classification_assembles_the_table_the_scores_and_the_checks_of_its_runs(toy_corpora, monkeypatch):
    monkeypatch.setitem(classification.SIZES, "quick", replace(
        classification.SIZES["quick"], tasks=("rotten_tomatoes", "newsgroups:motorcycles-med-guns"), n_train=None,
        epochs=1, scales=(0.5, 10), max_seeds={"newsgroups:motorcycles-med-guns": 1}))
    result = classification.run("quick", seeds=2)

    assert list(result) == ["profile_note", "corpus", "seeds_per_task", "lambda_table", "scores", "checks"]
    assert result["corpus"] == {"synthetic": "synthetic_task(seed=0)", "three": "three-class toy"}
    assert result["seeds_per_task"] == {"synthetic": 2, "three": 1}
    table = result["lambda_table"]
    assert [(row["task"], row["variant"], row["scale"], row["seed"]) for row in table] == \
        [(task, variant, scale, seed) for task, seeds in (("synthetic", (0, 1)), ("three", (0,)))
         for variant in SUN_LU_VARIANTS for scale in (0.5, 10) for seed in seeds]
    assert table[:4] == as_stored(lambda_table(toy_binary_task(), ("DP",), (0.5, 10), (0, 1), epochs=1,
                                               weight_decay=0.0))   # the chapter's building block's numbers
    scores = result["scores"]
    assert [(entry["task"], entry["variant"], entry["scale"], entry["vtw_weight"], entry["seed"])
            for entry in scores] == \
        [("synthetic", variant, scale, vtw_weight, seed) for seed in (0, 1)
         for variant, scale, vtw_weight in (("DP", 10.0, 0.0), ("DP", 100.0, 0.0), ("DP", 10.0, 1.0), ("AD", 10.0, 0.0))] \
        + [("three", variant, scale, 0.0, 0) for variant, scale in (("DP", 10.0), ("DP", 100.0), ("AD", 10.0))]
    assert list(scores[0]) == ["task", "variant", "scale", "vtw_weight", "seed", "test_accuracy", "classes", "vtw",
                               "average_weight_medians"]
    assert list(scores[3]) == ["task", "variant", "scale", "vtw_weight", "seed", "test_accuracy", "classes",
                               "average_weight_medians"]                                   # AD has no VᵀW
    assert list(scores[-1]["classes"]) == ["a", "b", "c", "neutral"]
    assert scores[0]["test_accuracy"] == table[2]["test_accuracy"]   # DP at scale 10, seed 0: one training, read twice

    checks = result["checks"]
    assert list(checks) == ["seeds", "n_test", "datasets", "claims"]
    assert checks["seeds"] == 1 and checks["n_test"] == {"synthetic": 20, "three": 12}
    assert checks["datasets"] == ["synthetic", "three"]
    claims = checks["claims"]
    assert "RT: the VᵀW penalty brings no accuracy gain (DP at scale 10, penalised minus not)" in claims
    assert "RT: DP, scale 10: the class favoured by the sign of VᵀW: attention scores above neutral (term D)" in claims
    assert "20News II: DP, scale 10: polarity tokens of every label get larger attention scores than neutral ones" in claims
    assert not any("scale 0.001" in name for name in claims)      # the table has no scale 0.001 to judge it
    assert {judged["verdict"] for judged in claims.values()} == {"not tested"}   # 2 seeds and 1: none is judged
    assert "fewer than 3 trained seeds" in claims["RT: the VᵀW penalty brings no accuracy gain (DP at scale 10, "
                                                  "penalised minus not)"]["reason"]


def test_interpretability_grid_has_one_run_per_data_set_encoder_projection_and_seed(toy_corpora):
    runs = interpretability.grid("full", seeds=2)
    # 2 data sets x encoders x (softmax, sparsemax, 7 other sparsegen λ) x seeds
    assert len(runs) == 2 * 2 * (2 + 7) * 2
    assert_distinct_system_runs(runs, "full")
    assert {run["task"] for run in runs} == {"rotten_tomatoes", "newsgroups:hockey-vs-baseball"}
    assert len(interpretability.grid("quick", seeds=3)) == 2 * 4 * 3
    medium = interpretability.grid("medium", seeds=3)    # 20 Newsgroups: BiLSTM only
    assert len(medium) == 2 * 9 * 3 + 9 * 3


def test_the_interpretability_pilots_grid_trains_its_designs_fresh_seeds_after_its_own(toy_corpora):
    fresh = interpretability.design.CONFIRMATORY.fresh_runs()
    pilot = interpretability.grid("medium", seeds=5)
    assert pilot[-len(fresh):] == fresh and len(pilot) == 2 * 9 * 5 + 9 * 5 + len(fresh) == len(set(pilot))
    assert pilot[:-len(fresh)] == [run for run in interpretability.grid("medium", seeds=15) if run["seed"] < 5]
    assert {run["seed"] for run in interpretability.grid("quick", seeds=5)} == {*range(5)}   # not the pilot's grid


def test_interpretability_assembles_the_rows_of_its_runs_and_judges_them(toy_corpora, monkeypatch, one_thread):
    quick = interpretability.SIZES["quick"]
    monkeypatch.setitem(interpretability.SIZES, "quick", replace(quick, tasks={"rotten_tomatoes": replace(
        quick.tasks["rotten_tomatoes"], n_train=None, epochs=1, embedding_dim=4, hidden_dim=4, n_test=6,
        sparsegen_lambdas=(-2.0, 0.0, 0.8), encoders=("bilstm", "transformer"))}))
    result = interpretability.run("quick", seeds=1)

    assert list(result) == ["profile_note", "corpus", "evaluation_subsets", "rows", "checks"]
    assert result["corpus"] == {"synthetic": "synthetic_task(seed=0)"}
    assert list(result["evaluation_subsets"]) == ["synthetic"] and result["evaluation_subsets"]["synthetic"]["size"] == 6
    assert [(row["encoder"], row["projection"], row["sparsegen_lambda"]) for row in result["rows"]] == \
        [(encoder, projection, lam) for encoder in ("bilstm", "transformer")
         for projection, lam in [("softmax", None), ("sparsemax", 0.0), ("sparsegen", -2.0), ("sparsegen", 0.8)]]
    swept = interpretability.sweep(toy_binary_task(), ("bilstm",), (-2.0, 0.0, 0.8), (0,), epochs=1, eval_examples=6,
                                   embed_dim=4, hidden_dim=4, lr=2e-3)   # the chapter's building block's numbers
    assert all(len(row.pop("items")["tau_gradient"]) == 6 for row in swept)   # per item, kept in the run records
    assert result["rows"][:4] == as_stored(swept)
    checks = result["checks"]
    assert (checks["seeds"], checks["n_test"], checks["lambdas"]) == (1, {"synthetic": 6}, {"rotten_tomatoes": [-2.0, 0.0, 0.8]})
    assert len(checks["claims"]) == 2 * 6        # per encoder: Table 1, Table 2, Fig. 3 twice on all and kept positions
    assert all(claim["verdict"] == "not tested" for claim in checks["claims"].values())   # one seed


def test_a_run_can_leave_out_the_intermediate_influence_and_nothing_else_changes(one_thread):
    task = toy_binary_task()
    model = fit(meister_config("bilstm", task.vocab_size, embed_dim=4, hidden_dim=4), task, epochs=1).model
    every = interpretability.importance_statistics(model, task.test)
    without = interpretability.importance_statistics(model, task.test, intermediate=False)
    assert every["intermediate_sentences"] == every["test_sentences"] > 0
    assert 0 < every["entropy_intermediate"] <= 1 and without["intermediate_sentences"] == 0
    assert without["entropy_intermediate"] is None and set(without["items"]["entropy_intermediate"]) == {None}
    assert {key: value for key, value in without.items() if "intermediate" not in key and key != "items"} == \
        {key: value for key, value in every.items() if "intermediate" not in key and key != "items"}


def test_every_interpretability_run_is_measured_on_a_stratified_sample_of_its_test_set():
    """Issue 50: the test sets are sorted by label; the runs are measured on a seeded, label-stratified random
    sample of each (never its first rows), the same for every run, recorded with its shares."""
    run = interpretability.grid("medium", 1)[0]
    sizes = interpretability.SIZES["medium"].tasks[run["task"]]
    task = classification.cached_task(run["task"], sizes.n_train)
    _, subset = classification.evaluation_subset(task.test, sizes.n_test, name=f"{task.name} test")
    first = task.test.labels[:sizes.n_test].float().mean().item()
    assert abs(first - 0.5) > 0.4                 # the first rows are nearly one class
    record = subset.record()
    assert record["size"] == sizes.n_test and all(
        abs(record["label_shares"][label] - share) <= 0.02 for label, share in record["split_shares"].items())
    assert min(record["label_shares"].values()) > 0.4


def test_the_tau_b_bound_is_what_ties_allow_and_is_reached(one_thread):
    """Issue 30: with a share of exact zeros, τ-b cannot exceed √(1 − tied pairs / pairs); an importance
    vector that agrees on every untied pair reaches it; τ over the non-zero support has no such cap."""
    weights = torch.tensor([[0.5, 0.3, 0.2] + [0.0] * 7])
    mask = torch.ones_like(weights, dtype=torch.bool)
    bound = float(interpretability.tau_b_bound(weights, mask)[0])
    assert bound == pytest.approx((1 - 21 / 45) ** 0.5)
    agreeing = torch.arange(10, 0, -1).float()[None]
    assert float(batched_kendall_tau_b(weights, agreeing, mask)[0]) == pytest.approx(bound)
    assert float(batched_kendall_tau_b(weights, agreeing, mask & (weights > 0))[0]) == pytest.approx(1.0)
    task = toy_binary_task()
    model = fit(meister_config("bilstm", task.vocab_size, embed_dim=4, hidden_dim=4, projection="sparsemax"),
                task, epochs=1).model
    measured = interpretability.importance_statistics(model, task.test)
    assert 0 < measured["tau_b_bound"] <= 1 and {"tau_gradient_support", "tau_loo_support"} <= set(measured)


@pytest.mark.parametrize("module", [classification, interpretability])
def test_execute_names_a_run_of_another_kind(module):
    with pytest.raises(ValueError, match="run.kind must be 'system'"):
        module.execute(Run.of("table", profile="quick", seed=0))


def test_lambda_entropy_correlation_reads_a_stored_nan_as_nan():
    rows = [{"encoder": "bilstm", "sparsegen_lambda": lam, "entropy_gradient": value}
            for lam, value in [(-2.0, 0.9), (0.0, None), (0.8, 0.5)]]      # None: a NaN read back from JSON
    assert math.isnan(interpretability.lambda_entropy_correlation(rows, "bilstm"))
