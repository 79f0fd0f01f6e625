"""Issues 17 and 30: the verdicts on Meister et al.'s claims (interpretability_claims.judge) and the ``checks``
of experiment ``interpretability``, on made-up runs whose trend is known: seeds are the unit of the trend
claims, Table 1 needs sparsemax shown within a margin of softmax, τ-b at its tie bound is "not tested"."""
from dataclasses import replace

import numpy as np
import pytest

from sparse_tutorial.experiments import interpretability

from sparse_tutorial.experiments.interpretability import claims as interpretability_claims
from sparse_tutorial.experiments.interpretability.claims import ENTROPY_MARGIN, judge

LAMBDAS = interpretability.PAPER_LAMBDAS
ITEMS = 60
KEYS = ("entropy_intermediate", "entropy_gradient", "tau_gradient", "tau_loo", "tau_gradient_support",
        "tau_loo_support")


def row(task, encoder, lam, seed, level, bound=1.0):
    """One run: every per-item measure ``level`` plus item noise, its tie bound ``bound`` on every item."""
    generator = np.random.default_rng([seed, int(1000 * (lam + 10 if lam is not None else 99))])
    items = {key: (level + 0.02 * generator.standard_normal(ITEMS)).round(4).tolist() for key in KEYS}
    items["tau_b_bound"] = [bound] * ITEMS
    projection = "softmax" if lam is None else "sparsemax" if lam == 0 else "sparsegen"
    return {"task": task, "encoder": encoder, "projection": projection, "sparsegen_lambda": lam, "seed": seed,
            "test_sentences": ITEMS, "items": items, **{key: float(np.mean(v)) for key, v in items.items()}}


def rows(slope, seeds=3, seed_noise=0.01, softmax_gap=0.0, bound_gap=None, task="rotten_tomatoes",
         encoder="bilstm"):
    """Runs whose measures are 0.5 + slope · λ (+ seed noise); softmax's is sparsemax's + ``softmax_gap``;
    with ``bound_gap`` every sparse run's tie bound sits that far above its τ-b."""
    generator = np.random.default_rng(0)
    made = [row(task, encoder, None, seed, 0.5 + softmax_gap) for seed in range(seeds)]
    for lam in LAMBDAS:
        for seed in range(seeds):
            level = 0.5 + slope * lam + seed_noise * generator.standard_normal()
            made.append(row(task, encoder, lam, seed, level, 1.0 if bound_gap is None else level + bound_gap))
    return made


def verdicts(made):
    """``{the claim's first words: verdict}``."""
    return {name.split(":")[0].split(",")[0] + (" loo" if "leave-one-out" in name else "")
            + (" support" if "keeps" in name else ""): judged["verdict"] for name, judged in judge(made).items()}


def test_measures_falling_with_lambda_confirm_table_2_and_fig_3():
    assert verdicts(rows(slope=-0.1)) == {"Table 1": "✓", "Table 2": "✓", "Fig. 3": "✓", "Fig. 3 support": "✓",
                                          "Fig. 3 loo": "✓", "Fig. 3 loo support": "✓"}


def test_measures_rising_with_lambda_contradict_them():
    found = verdicts(rows(slope=0.1))
    assert found["Table 2"] == found["Fig. 3"] == found["Fig. 3 loo support"] == "✗"


def test_seeds_that_disagree_leave_a_trend_open():
    judged = judge(rows(slope=0.0, seed_noise=0.2))
    entry = judged["Table 2, BiLSTM, rotten_tomatoes: λ correlates negatively with the entropy of gradient importance"]
    assert entry["verdict"] == "?" and entry["ci95"][0] < 0 < entry["ci95"][1]
    assert len(entry["seed_level"]["a"]) == 3       # one τ-b per trained seed


@pytest.mark.parametrize("gap,expected", [(0.0, "✓"), (0.3, "✗")])
def test_table_1_needs_sparsemax_within_the_margin_of_softmax(gap, expected):
    entry = judge(rows(slope=-0.1, softmax_gap=gap))[
        "Table 1, BiLSTM, rotten_tomatoes: sparsemax spreads the inputs' influence on h_p as much as softmax"]
    assert entry["verdict"] == expected and entry["margin"] == ENTROPY_MARGIN
    assert entry["paper_effect"] == pytest.approx(-0.02)


def test_tau_b_at_its_tie_bound_is_not_tested_and_the_support_claim_is_judged_beside_it():
    judged = judge(rows(slope=-0.1, bound_gap=0.01))
    at_bound = judged["Fig. 3, BiLSTM, rotten_tomatoes: attention agrees less with gradient importance as λ grows"]
    assert at_bound["verdict"] == "not tested" and "tie bound" in at_bound["reason"]
    support = judged["Fig. 3, BiLSTM, rotten_tomatoes: attention agrees less with gradient importance as λ grows "
                     "(τ over the positions attention keeps)"]
    assert support["verdict"] == "✓"


def test_fewer_than_three_seeds_are_not_tested():
    assert set(verdicts(rows(slope=-0.1, seeds=2)).values()) == {"not tested"}


def test_every_data_set_and_encoder_is_judged_on_its_own_runs_in_one_holm_family():
    made = rows(slope=-0.1) + rows(slope=0.1, task="newsgroups:hockey-vs-baseball", encoder="transformer")
    judged = judge(made)
    name = "Table 2, {}: λ correlates negatively with the entropy of gradient importance"
    assert judged[name.format("BiLSTM, rotten_tomatoes")]["verdict"] == "✓"
    assert judged[name.format("Transformer, newsgroups:hockey-vs-baseball")]["verdict"] == "✗"
    assert len(judged) == 12
    tested = [entry for entry in judged.values() if entry["p"] is not None]
    assert all(entry["p_holm"] >= entry["p"] for entry in tested)


def test_checks_say_what_the_verdicts_rest_on_and_the_results_leave_the_items_in_the_records(monkeypatch):
    made = rows(slope=-0.1) + rows(slope=-0.1, task="newsgroups:hockey-vs-baseball")
    medium = interpretability.SIZES["medium"]
    monkeypatch.setitem(interpretability.SIZES, "medium", replace(medium, tasks={
        name: replace(sizes, sparsegen_lambdas=LAMBDAS) for name, sizes in medium.tasks.items()}))
    checks = interpretability.checks("medium", made)
    assert checks["seeds"] == 3 and checks["n_test"] == {"rotten_tomatoes": ITEMS, "newsgroups:hockey-vs-baseball": ITEMS}
    assert set(checks["claims"]) == set(judge(made))
    measured_on = {"size": ITEMS, "index_sha256": "same"}
    assembled = interpretability.assemble("medium", 3, [], [{"row": r, "corpus": {}, "evaluation_subset": measured_on}
                                                            for r in made])
    assert all("items" not in stored for stored in assembled["rows"])
    assert assembled["evaluation_subsets"] == {task: measured_on for task in checks["n_test"]}
    other = [{"row": r, "corpus": {}, "evaluation_subset": {**measured_on, "index_sha256": str(k == 5)}}
             for k, r in enumerate(made)]
    with pytest.raises(ValueError, match="measured on different test items"):
        interpretability.assemble("medium", 3, [], other)
    assert interpretability_claims.TIE_BOUND_GAP > 0


@pytest.mark.parametrize("profile", ["medium", "full"])
def test_the_stored_runs_use_the_papers_lambda_grid_and_enough_test_sentences(profile):
    tasks = interpretability.SIZES[profile].tasks
    assert tasks["rotten_tomatoes"].sparsegen_lambdas == (-4.0, -2.0, -1.0, 0.0, 0.25, 0.5, 0.75, 0.9)
    assert tasks["rotten_tomatoes"].n_test >= 500 and tasks["rotten_tomatoes"].n_train is None
    assert "newsgroups:hockey-vs-baseball" in tasks
    news = tasks["newsgroups:hockey-vs-baseball"]      # issue 50: Table 1 on at least 200 posts of both classes
    assert news.n_test >= 200 and {"softmax", "sparsemax"} <= set(news.intermediate_projections)
