"""Issue 17: the verdicts on chapter 13's claims (explanation_claims.judge) on made-up per-sentence outcomes,
so each rule is seen to give ✓, ✗ and ?."""
import numpy as np

from sparse_tutorial.experiments.explanation_claims import checks, judge

SEEDS, SENTENCES = 3, 400
MODELS = ("learned", "uniform_trained", "frozen_trained", "adversary_trained", "encoder_free_frozen",
          "encoder_free_uniform")


def outcomes(rates: dict[str, float]) -> dict[str, list[list[int]]]:
    """Per name, per seed, a 0/1 outcome per sentence, 1 with probability ``rates[name]``."""
    generator = np.random.default_rng(0)
    return {name: (generator.random((SEEDS, SENTENCES)) < rate).astype(int).tolist() for name, rate in rates.items()}


def verdicts(correct_rates: dict[str, float], flip_rates: dict[str, float]) -> list[str]:
    return [claim["verdict"] for claim in judge(outcomes(correct_rates), outcomes(flip_rates)).values()]


def test_what_the_papers_claim_comes_out_supported():
    correct = dict(learned=0.78, uniform_trained=0.78, frozen_trained=0.88, adversary_trained=0.78,
                   encoder_free_frozen=0.85, encoder_free_uniform=0.70)
    assert verdicts(correct, dict(attention=0.20, random=0.05)) == ["✓"] * 5


def test_the_opposite_comes_out_contradicted():
    correct = dict(learned=0.85, uniform_trained=0.70, frozen_trained=0.60, adversary_trained=0.60,
                   encoder_free_frozen=0.60, encoder_free_uniform=0.75)
    assert verdicts(correct, dict(attention=0.02, random=0.15)) == ["✗"] * 5


def nearly_the_same(names: tuple[str, ...], rate: float) -> dict[str, list[list[int]]]:
    """Outcomes that differ between ``names`` on a handful of sentences per seed, in both directions."""
    generator = np.random.default_rng(1)
    base = generator.random((SEEDS, SENTENCES)) < rate
    made = {}
    for name in names:
        toggled = base.copy()
        for seed in range(SEEDS):
            picks = generator.choice(SENTENCES, size=6, replace=False)
            toggled[seed, picks] = ~toggled[seed, picks]
        made[name] = toggled.astype(int).tolist()
    return made


def test_differences_too_small_to_resolve_leave_the_directional_claims_open():
    judged = judge(nearly_the_same(MODELS, 0.78), nearly_the_same(("attention", "random"), 0.1))
    # "no better" claims stand when no gain is resolved; "beats" claims get no verdict
    assert [claim["verdict"] for claim in judged.values()] == ["?", "✓", "?", "?", "✓"]
    for claim in judged.values():
        low, high = claim["ci95"]
        assert low < claim["difference"] < high and high - low < 0.1   # the resolution the run states


def test_checks_count_the_seeds_and_sentences_the_claims_rest_on():
    correct = outcomes(dict.fromkeys(MODELS, 0.8))
    flips = {name: [values[:100] for values in per_seed[:2]]
             for name, per_seed in outcomes(dict(attention=0.1, random=0.1)).items()}
    result = checks(correct, flips)
    assert (result["seeds"], result["n_test"]) == (2, 100)
    assert list(result["claims"]) == list(judge(correct, flips))
