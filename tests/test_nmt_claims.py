"""Issue 16: the verdicts of chapter 9 are computed by tests that can come out either way."""
import pytest

from sparse_tutorial.experiments.nmt_claims import bleu_test, judge
from sparse_tutorial.experiments.verdicts import seed_test, verdict

REFERENCES = [[f"and god said let there be light number {i} ."] for i in range(60)]
GOOD = [refs[0] for refs in REFERENCES]
POOR = [f"and he said number {i}" for i in range(60)]


@pytest.mark.parametrize("difference, p, sign, expected", [
    (1.0, 0.01, 1, "✓"), (-1.0, 0.01, 1, "✗"), (1.0, 0.3, 1, "?"), (-1.0, 0.01, -1, "✓"),
    (1.0, None, 1, "?"), (0.0, 0.001, 1, "?"), (1.0, float("nan"), 1, "?"),
])
def test_verdict(difference, p, sign, expected):
    assert verdict(difference, p, sign) == expected


def test_bleu_test_pools_the_seeds_both_systems_have():
    outputs = {"NMT": [POOR, POOR, POOR], "+Entropy": [GOOD, GOOD]}
    difference, p = bleu_test(outputs, REFERENCES, "+Entropy", "NMT")
    assert difference > 50 and p < 0.05
    reverse, _ = bleu_test(outputs, REFERENCES, "NMT", "+Entropy")
    assert reverse == pytest.approx(-difference)


def test_seed_test_is_paired_and_needs_two_seeds():
    assert seed_test([1.0], [2.0]) == (-1.0, None)
    difference, p = seed_test([0.1, 0.3, 0.15], [2.0, 2.1, 2.2])
    assert difference == pytest.approx(-1.9167, abs=1e-3) and p < 0.05
    assert seed_test([1.0, 1.0], [0.0, 0.0])[1] is None  # differences that do not vary: no p-value


def test_judge_can_contradict_the_paper():
    """+Entropy worse than NMT in BLEU and in AER must come out ✗, not ✓ or ?."""
    outputs = {"NMT": [GOOD] * 3, "+Entropy": [POOR] * 3}
    per_seed = {"NMT": [{"entropy_per_token": 2.0 + s / 10} for s in range(3)],
                "+Entropy": [{"entropy_per_token": 0.1 + s / 7} for s in range(3)]}
    alignment = {"NMT": [{"aer": 0.5 + s / 100} for s in range(3)], "+Entropy": [{"aer": 0.8 + s / 90} for s in range(3)]}
    claims = judge(outputs, REFERENCES, per_seed, {}, alignment)
    assert claims["+Entropy beats NMT in BLEU"]["verdict"] == "✗"
    assert claims["+Entropy lowers AER"]["verdict"] == "✗"
    assert claims["+Entropy lowers the entropy per token"]["verdict"] == "✓"
    assert "+Coverage beats NMT" not in claims  # a claim about a system that did not run is left out


def test_the_best_lambda_claim():
    sweep = {"0.005": POOR, "0.01": GOOD, "0.02": POOR}
    claims = judge({"NMT": [GOOD]}, REFERENCES, {"NMT": [{"entropy_per_token": 1.0}]}, sweep, None)
    assert claims["λ = 0.01 is the best λ"]["verdict"] == "✓"
    sweep["0.02"] = GOOD + []  # a rival as good as λ = 0.01: undecided
    sweep["0.005"] = GOOD[:-1] + ["nothing"]
    claims = judge({"NMT": [GOOD]}, REFERENCES, {"NMT": [{"entropy_per_token": 1.0}]}, sweep, None)
    assert claims["λ = 0.01 is the best λ"]["verdict"] == "?"
    sweep["0.01"] = POOR
    claims = judge({"NMT": [GOOD]}, REFERENCES, {"NMT": [{"entropy_per_token": 1.0}]}, sweep, None)
    assert claims["λ = 0.01 is the best λ"]["verdict"] == "✗"
