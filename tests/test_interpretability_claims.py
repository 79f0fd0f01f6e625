"""Issue 17: the verdicts on Meister et al.'s claims (interpretability_claims.judge) and the ``checks`` of
experiment ``interpretability``, on made-up rows whose trend is known, so each rule is seen to give ✓, ✗ and ?."""
from dataclasses import replace

import numpy as np
import pytest

from sparse_tutorial.experiments import interpretability
from sparse_tutorial.experiments import interpretability_claims

LAMBDAS = interpretability.PAPER_LAMBDAS
MEASURES = ("entropy_intermediate", "entropy_gradient", "tau_gradient", "tau_loo")


def judge(made: list[dict]) -> dict[str, dict]:
    """The verdicts with few bootstrap resamples: the correlation's own p-value decides them, the
    resamples only give the interval."""
    return interpretability_claims.judge(made, n_samples=50)


def rows(slope: float, seeds: int = 3, noise: float = 0.01, task: str = "rotten_tomatoes",
         encoder: str = "bilstm") -> list[dict]:
    """One row per λ × seed (plus softmax, which no claim uses) whose every measure is 0.5 + slope · λ + noise."""
    generator = np.random.default_rng(0)
    made = [{"task": task, "encoder": encoder, "projection": "softmax", "sparsegen_lambda": None, "seed": seed,
             "test_sentences": 500, **dict.fromkeys(MEASURES, 0.0)} for seed in range(seeds)]
    for lam in LAMBDAS:
        for seed in range(seeds):
            made.append({"task": task, "encoder": encoder, "projection": "sparsegen", "sparsegen_lambda": lam,
                         "seed": seed, "test_sentences": 500,
                         **{key: 0.5 + slope * lam + noise * generator.standard_normal() for key in MEASURES}})
    return made


def verdicts(made: list[dict]) -> dict[str, str]:
    """``{the claim's first words: verdict}``."""
    return {name.split(":")[0].split(",")[0] + (" loo" if "leave-one-out" in name else ""): judged["verdict"]
            for name, judged in judge(made).items()}


def test_a_measure_falling_with_lambda_confirms_table_2_and_fig_3_and_contradicts_table_1():
    assert verdicts(rows(slope=-0.1)) == {"Table 1": "✗", "Table 2": "✓", "Fig. 3": "✓", "Fig. 3 loo": "✓"}


def test_a_measure_rising_with_lambda_contradicts_table_2_and_fig_3_and_confirms_table_1():
    assert verdicts(rows(slope=0.1)) == {"Table 1": "✓", "Table 2": "✗", "Fig. 3": "✗", "Fig. 3 loo": "✗"}


def test_no_trend_leaves_table_2_and_fig_3_open_and_the_no_worse_claim_of_table_1_standing():
    judged = judge(rows(slope=0.0, noise=0.1))
    assert [claim["verdict"] for claim in judged.values()] == ["✓", "?", "?", "?"]
    low, high = judged["Table 2, BiLSTM, rotten_tomatoes: λ correlates negatively with the entropy of gradient "
                       "importance"]["ci95"]
    assert low < 0 < high                  # the interval says how large a τ the run cannot rule out


def test_too_few_defined_runs_give_no_verdict():
    made = rows(slope=-0.1)
    for row in made[5:]:
        row.update(dict.fromkeys(MEASURES, None))     # NaN as stored in JSON
    assert {claim["verdict"] for claim in judge(made).values()} == {"?"}


def test_every_data_set_and_encoder_is_judged_on_its_own_runs():
    made = rows(slope=-0.1) + rows(slope=0.1, task="newsgroups:hockey-vs-baseball", encoder="transformer")
    judged = judge(made)
    assert judged["Table 2, BiLSTM, rotten_tomatoes: λ correlates negatively with the entropy of gradient "
                  "importance"]["verdict"] == "✓"
    assert judged["Table 2, Transformer, newsgroups:hockey-vs-baseball: λ correlates negatively with the entropy "
                  "of gradient importance"]["verdict"] == "✗"
    assert len(judged) == 8


def test_checks_say_what_the_verdicts_rest_on(monkeypatch):
    monkeypatch.setattr(interpretability, "judge", judge)
    made = rows(slope=-0.1) + rows(slope=-0.1, seeds=2, task="newsgroups:hockey-vs-baseball")
    for row in made[-18:]:
        row["test_sentences"] = 40
    medium = interpretability.SIZES["medium"]
    monkeypatch.setitem(interpretability.SIZES, "medium", replace(medium, tasks={
        name: replace(sizes, sparsegen_lambdas=LAMBDAS if name == "rotten_tomatoes" else (0.0, 0.5))
        for name, sizes in medium.tasks.items()}))
    checks = interpretability.checks("medium", made)
    assert checks["seeds"] == 2
    assert checks["n_test"] == {"rotten_tomatoes": 500, "newsgroups:hockey-vs-baseball": 40}
    assert checks["lambdas"] == {"rotten_tomatoes": list(LAMBDAS), "newsgroups:hockey-vs-baseball": [0.0, 0.5]}
    assert set(checks["claims"]) == set(judge(made))
    for judged in checks["claims"].values():
        assert set(judged) == {"verdict", "p", "difference", "test", "paper", "ci95"}


@pytest.mark.parametrize("profile", ["medium", "full"])
def test_the_stored_runs_use_the_papers_lambda_grid_and_enough_test_sentences(profile):
    tasks = interpretability.SIZES[profile].tasks
    assert tasks["rotten_tomatoes"].sparsegen_lambdas == (-4.0, -2.0, -1.0, 0.0, 0.25, 0.5, 0.75, 0.9)
    assert tasks["rotten_tomatoes"].n_test >= 500 and tasks["rotten_tomatoes"].n_train is None
    assert "newsgroups:hockey-vs-baseball" in tasks
