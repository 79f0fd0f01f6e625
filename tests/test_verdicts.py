"""The verdict rule and the tests every experiment's claims use (experiments/verdicts.py)."""
import numpy as np
import pytest

from sparse_tutorial.experiments.verdicts import (
    bootstrap_test,
    claim,
    correlation_test,
    no_better_verdict,
    rank_test,
    seed_test,
    verdict,
)
from sparse_tutorial.training import epoch_generator, epoch_seed

RNG = np.random.default_rng(0)
NOISE = RNG.normal(0, 1, size=(3, 400))


@pytest.mark.parametrize("shift, expected", [(0.5, "✓"), (-0.5, "✗"), (0.0, "?")])
def test_bootstrap_over_items_gives_every_verdict(shift, expected):
    difference, p, (low, high) = bootstrap_test(NOISE + shift + RNG.normal(0, 0.3, NOISE.shape), NOISE)
    assert verdict(difference, p) == expected
    assert low <= difference <= high
    if expected != "?":
        assert p < 0.01 and abs(difference - shift) < 0.1


def test_bootstrap_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="same shape"):
        bootstrap_test([[1.0, 2.0]], [[1.0]])


def test_seed_test_is_undefined_for_one_seed_and_paired_otherwise():
    assert seed_test([1.0], [0.0]) == (1.0, None)
    difference, p = seed_test([1.1, 2.12, 3.09], [1.0, 2.0, 3.0])
    assert difference == pytest.approx(0.1033, abs=1e-3) and p < 0.05


@pytest.mark.parametrize("shift, expected", [(1.0, "✓"), (-1.0, "✗"), (0.0, "?")])
def test_rank_test_needs_every_seed_to_agree(shift, expected):
    samples = [RNG.normal(shift, 1, 60) for _ in range(3)]
    others = [RNG.normal(0, 1, 80) for _ in range(3)]
    difference, p = rank_test(samples, others)
    assert verdict(difference, p) == expected


def test_rank_test_of_empty_groups_cannot_tell():
    difference, p = rank_test([[]], [[1.0]])
    assert verdict(difference, p) == "?"


@pytest.mark.parametrize("slope, expected", [(1.0, "✓"), (-1.0, "✗"), (0.0, "?")])
@pytest.mark.parametrize("method", ["kendall", "spearman", "pearson"])
def test_correlation_test_gives_every_verdict_with_an_interval(slope, expected, method):
    x = np.repeat(np.linspace(0, 1, 8), 3)
    y = slope * x + RNG.normal(0, 0.1, len(x)) if slope else RNG.normal(0, 1, len(x))
    value, p, (low, high) = correlation_test(x, y, method)
    assert verdict(value, p) == expected or (slope == 0 and verdict(value, p) != "?" and p > 0.01)
    assert low <= high


def test_correlation_of_constant_input_is_undefined():
    value, p, _ = correlation_test([1, 2, 3, 4], [5, 5, 5, 5])
    assert np.isnan(value) and p is None and verdict(value, p) == "?"


def test_no_better_is_contradicted_only_by_a_significant_gain():
    assert [no_better_verdict(d, p) for d, p in [(1.0, 0.01), (-1.0, 0.01), (1.0, 0.5)]] == ["✗", "✓", "✓"]


def test_claim_records_the_interval_only_when_the_test_gives_one():
    assert "ci95" not in claim("paper", 1.0, 0.01, "t")
    assert claim("paper", 1.0, 0.01, "t", ci95=(0.5, 1.5))["ci95"] == [0.5, 1.5]
    assert claim("paper", float("nan"), None, "t")["verdict"] == "?"


def test_one_shuffle_rule_per_seed_and_epoch():
    assert epoch_seed(2, 3) == 2003
    first = torch_randperm(epoch_generator(0, 1))
    assert first == torch_randperm(epoch_generator(0, 1)) and first != torch_randperm(epoch_generator(0, 2))
    with pytest.raises(ValueError, match="epoch"):
        epoch_seed(0, -1)


def torch_randperm(generator):
    import torch
    return torch.randperm(50, generator=generator).tolist()


def test_claims_table_lists_contradictions_first_with_their_interval():
    from sparse_tutorial.experiments.verdicts import claims_table
    rows = claims_table({"holds": claim("p", 0.4123, 0.01, "t", ci95=(0.1, 0.7)),
                         "fails": claim("p", -1.0, 0.01, "t"), "open": claim("p", 0.2, 0.3, "t")})
    assert [row["claim"] for row in rows] == ["fails", "open", "holds"]
    assert rows[2]["ours"] == "+0.412 [+0.1, +0.7]" and rows[0]["verdict"] == "✗"


def test_verdicts_in_brief_names_every_claim_under_its_verdict_contradictions_first():
    from sparse_tutorial.experiments.verdicts import verdicts_in_brief
    brief = verdicts_in_brief({"holds": claim("p", 0.4, 0.01, "t"), "fails": claim("p", -0.4, 0.01, "t"),
                               "unclear": claim("p", 0.1, 0.4, "t"), "also holds": claim("p", 0.3, 0.02, "t")})
    assert brief.splitlines() == ["✗ (1): fails", "? (1): unclear", "✓ (2): holds; also holds"]
    assert verdicts_in_brief({}).splitlines() == ["✗ (0): none", "? (0): none", "✓ (0): none"]
    many = {f"claim {k}": claim("p", 0.4, 0.01, "t") for k in range(5)}
    assert verdicts_in_brief(many, most=2).splitlines()[2] == "✓ (5): claim 0; claim 1; and 3 more"


def test_described_claim_gives_the_numbers_a_sentence_needs():
    from sparse_tutorial.experiments.verdicts import described_claim
    judged = claim("p", -0.0148, 0.046, "t", ci95=(-0.0293, -0.00095))
    assert described_claim(judged) == "✗ (-0.01, 95 % interval [-0.03, -0.00], p = 0.046)"
    assert (described_claim(judged, 100, "+.1f", " points", with_verdict=False)
            == "-1.5 points (95 % interval [-2.9, -0.1], p = 0.046)")
    assert (described_claim(claim("p", 0.68, 6.6e-6, "t"), label="τ-b = ")
            == "✓ (τ-b = +0.68, p = 6.6e-06)")
