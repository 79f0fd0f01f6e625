"""Chapter 10's verdicts (experiments/summarization_claims.py) can come out ✓, ✗ and ?."""
import numpy as np

from sparse_tutorial.experiments.summarization_claims import equivalence_verdict, judge

RNG = np.random.default_rng(1)
BASE = np.tile(RNG.uniform(10, 60, size=300), (3, 1))  # the same documents in every seed


def scores(**shifts):
    return {name: (BASE + shift + RNG.normal(0, 2, BASE.shape)).tolist() for name, shift in shifts.items()}


def per_seed(**values):
    return {name: [{"entropy_per_token": v, "repeated_trigrams_percent": v, "unk_percent_oov": v}
                   for v in (value, value + 0.1, value + 0.25)] for name, value in values.items()}


SYSTEMS = {"ABS": 0, "ABS+Pointer": 5, "ABS+Pointer+Ent (λ=0.01)": 5, "ABS+Pointer+Ent (λ=0.04)": 8,
           "ABS+Pointer+Cov": 3, "ABS+Pointer+Cov+Ent (λ=0.02)": 3}


def test_every_claim_is_judged_and_each_verdict_is_reachable():
    claims = judge(scores(**SYSTEMS), per_seed(**{name: 2.0 for name in SYSTEMS}),
                   {"Lead-1": (BASE[0] + 8).tolist(), "Lead-3": (BASE[0] - 20).tolist()})
    verdicts = {name: entry["verdict"] for name, entry in claims.items()}
    assert verdicts["the pointer improves over ABS"] == "✓"
    assert verdicts["+Ent (λ = 0.01) improves over the pointer model"] == "?"
    assert verdicts["+Ent (λ = 0.04) improves over the pointer model"] == "✓"
    assert verdicts["entropy improves the pointer model for every λ"] == "?"
    assert verdicts["λ = 0.04 is the best entropy weight"] == "✓"
    assert verdicts["coverage improves over the pointer model"] == "✗"
    assert verdicts["Cov+Ent improves over Cov"] == "?"
    assert verdicts["Lead-1 is on par with the best abstractive system"] == "✓"
    assert verdicts["Lead-3 is on par with the best abstractive system"] == "✗"
    assert verdicts["coverage reduces repeated trigrams"] == "?"  # no difference at all
    assert all(set(entry) >= {"verdict", "p", "difference", "test", "paper"} for entry in claims.values())


def test_a_better_rival_contradicts_the_best_lambda():
    shifted = dict(SYSTEMS, **{"ABS+Pointer+Ent (λ=0.01)": 12})
    claims = judge(scores(**shifted), {}, {})
    assert claims["λ = 0.04 is the best entropy weight"]["verdict"] == "✗"
    assert claims["entropy improves the pointer model for every λ"]["verdict"] == "✓"


def test_equivalence_needs_the_whole_interval_inside_the_margin():
    assert [equivalence_verdict(ci) for ci in [(-0.5, 0.5), (1.2, 3.0), (-0.5, 1.5)]] == ["✓", "✗", "?"]
