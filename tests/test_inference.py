"""Issue 30: the inference standard. Every rule can return every verdict it has; seeds are the unit; the
bootstrap's BLEU is sacrebleu's; Holm's correction is the textbook one."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sparse_tutorial.stats.inference import (
    ALPHA, POWER, VERDICT_FIELDS, Claim, NotTested, acted, aer_score, bleu_score, bleu_statistics, compare, holm,
    holm_levels, interval_agrees, judge_family, minimum_detectable_effect, paired_t, ratio_score, seed_interval,
    seed_test,
    t_needed, verdict,
)
from sparse_tutorial.metrics import aer, corpus_bleu


def arms(mean_a: float, mean_b: float, seeds: int = 3, items: int = 300, item_sd: float = 1.0,
         seed_sd: float = 0.05, rng_seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per-item statistics ``(value, 1)`` of two arms: each seed shifts its items by its own offset."""
    rng = np.random.default_rng(rng_seed)
    base = rng.normal(0, item_sd, items)  # item difficulty, shared by the arms (paired items)

    def arm(mean: float) -> np.ndarray:
        values = [mean + base + rng.normal(0, seed_sd) + rng.normal(0, 0.1, items) for _ in range(seeds)]
        return np.stack([np.stack([v, np.ones(items)], axis=-1) for v in values])
    return arm(mean_a), arm(mean_b)


@pytest.mark.parametrize("kind, a, b, margin, expected", [
    ("greater", 1.0, 0.0, None, "✓"), ("greater", 0.0, 1.0, None, "✗"), ("greater", 0.0, 0.0, None, "?"),
    ("less", 0.0, 1.0, None, "✓"), ("less", 1.0, 0.0, None, "✗"), ("less", 0.0, 0.0, None, "?"),
    ("equivalent", 0.0, 0.0, 0.5, "✓"), ("equivalent", 2.0, 0.0, 0.5, "✗"), ("equivalent", 0.45, 0.0, 0.5, "?"),
    ("not_greater", 0.0, 0.0, 0.5, "✓"), ("not_greater", 2.0, 0.0, 0.5, "✗"), ("not_greater", 0.5, 0.0, 0.5, "?"),
    ("not_less", 0.0, 0.0, 0.5, "✓"), ("not_less", 0.0, 2.0, 0.5, "✗"), ("not_less", 0.0, 0.5, 0.5, "?"),
])
def test_every_kind_of_claim_can_come_out_every_way(kind, a, b, margin, expected):
    evidence = compare(*arms(a, b), what="toy")
    result = judge_family({"c": (Claim("paper", kind=kind, margin=margin), evidence)})["c"]
    assert result["verdict"] == expected, result
    assert result["p"] <= result["p_holm"] <= 1 and len(result["ci95"]) == 2 and result["seeds"] == [3, 3]
    # a chapter re-derives every stored verdict from the stored numbers
    assert verdict(**{key: result[key] for key in VERDICT_FIELDS}) == expected


def test_a_contradiction_of_a_margin_claim_is_judged_as_firmly_as_a_support():
    """Three seeds ahead by 2, 21 and 2.5 against a margin of 0.5 (chapter 10's λ = 0.005 against λ = 0.01):
    the hierarchical bootstrap's interval lies beyond the margin, but the seeds disagree too much for their
    own test, so "on par" is not contradicted; seeds that agree contradict it, unless the family is large."""
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1.0, 300)

    def arm(seed_means: list[float]) -> np.ndarray:
        return np.stack([np.stack([m + base + rng.normal(0, 0.1, 300), np.ones(300)], axis=-1) for m in seed_means])

    on_par = Claim("p", kind="equivalent", margin=0.5)
    spread = compare(arm([2.0, 21.0, 2.5]), arm([0.0, 0.0, 0.0]))
    assert spread.ci95[0] > 0.5  # the bootstrap alone would call it a contradiction
    result = judge_family({"c": (on_par, spread)})["c"]
    assert result["verdict"] == "?" and result["p_against_corrected"] >= 0.05
    agreeing = compare(arm([2.0, 2.2, 2.5]), arm([0.0, 0.0, 0.0]))
    assert judge_family({"c": (on_par, agreeing)})["c"]["verdict"] == "✗"
    family = {f"c{k}": (on_par, agreeing) for k in range(200)}  # 200 claims: the correction outweighs the evidence
    corrected = judge_family(family)["c0"]
    assert corrected["p_against_corrected"] == pytest.approx(min(1.0, 200 * corrected["p_against"]))
    assert corrected["verdict"] == "?"
    directional = judge_family({"c": (Claim("p"), agreeing)})["c"]
    assert directional["p_against"] is None and directional["p_against_corrected"] is None


def test_not_tested_when_an_arm_has_fewer_than_three_seeds_or_a_precondition_fails():
    one_seed = compare(*arms(1.0, 0.0, seeds=1))
    judged = judge_family({"one seed": (Claim("p"), one_seed),
                           "did not act": (Claim("p"), NotTested("the penalty did not lower the entropy", {"x": 1}))})
    assert judged["one seed"]["verdict"] == "not tested" and "fewer than 3" in judged["one seed"]["reason"]
    assert judged["did not act"]["verdict"] == "not tested" and judged["did not act"]["p"] is None
    assert acted(compare(*arms(-1.0, 0.0)), expected_sign=-1) and not acted(compare(*arms(0.0, 0.0)), expected_sign=-1)


def test_seeds_are_the_unit_a_seed_spread_larger_than_the_effect_is_not_significant():
    """Thousands of items cannot make up for three seeds that disagree: the pooled-items test of the old
    standard would call this effect significant; the seed-level test does not."""
    evidence = compare(*arms(0.2, 0.0, items=3000, seed_sd=1.0, rng_seed=3))
    result = judge_family({"c": (Claim("p"), evidence)})["c"]
    assert result["verdict"] == "?" and result["seed_level"]["ci95"][0] < 0 < result["seed_level"]["ci95"][1]


def test_seed_interval_is_the_t_interval_of_the_seeds_mean():
    values = [0.599, 0.605, 0.584]
    expected = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert seed_interval(values) == pytest.approx(list(expected), rel=1e-9)
    assert seed_interval([0.6]) is None and seed_interval([0.6, 0.6, 0.6]) is None


@pytest.mark.parametrize("kind, a, b, margin", [
    ("greater", 0.3, 0.0, None), ("less", 0.3, 0.0, None), ("not_greater", -0.4, 0.0, 0.5),
    ("not_less", 0.0, 0.2, 0.5), ("equivalent", 0.1, 0.0, 0.5), ("equivalent", -0.2, 0.0, 0.5)])
def test_the_seed_test_of_a_stored_claim_is_the_seeds_part_of_its_p(kind, a, b, margin):
    """seed_test recomputes, from a stored claim alone, the paired t over seeds that p_value took; a p at
    t_needed's t is the p asked for; and p is never below the seeds' p."""
    result = judge_family({"c": (Claim("p", kind=kind, margin=margin),
                                 compare(*arms(a, b, seed_sd=0.1, rng_seed=1)))})["c"]
    t, seeds_p = seed_test(result["kind"], result["margin"], result["seed_level"])
    assert seeds_p <= result["p"] * 1.001
    assert abs(t_needed(seeds_p, 3, kind)) == pytest.approx(abs(t), rel=1e-6)
    assert seed_test(kind, margin, {**result["seed_level"], "se": None}) is None


def test_three_seeds_must_agree_almost_exactly_to_pass_holms_first_step_over_many_claims():
    first_step = ALPHA / 17
    assert t_needed(first_step, 3, "greater") == pytest.approx(18.4, abs=0.05)
    assert t_needed(first_step, 3, "not_greater") == pytest.approx(13.0, abs=0.05)
    assert t_needed(first_step, 10, "greater") < t_needed(first_step, 5, "greater") < 7
    with pytest.raises(ValueError, match="2 seeds"):
        t_needed(first_step, 1, "greater")


def test_holm_adjusts_step_down():
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    family = {f"c{i}": (Claim("p"), compare(*arms(0.3, 0.0, rng_seed=i, items=60, item_sd=0.1, seed_sd=0.02)))
              for i in range(6)}
    judged = judge_family(family)
    assert all(entry["p_holm"] >= entry["p"] for entry in judged.values())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=12))
def test_holm_rejects_a_claim_exactly_when_its_p_is_below_its_holm_level(p_values):
    for p, adjusted, level in zip(p_values, holm(p_values), holm_levels(p_values)):
        assert (adjusted < ALPHA) == (p < level)
        assert ALPHA / len(p_values) <= level <= ALPHA


def test_the_interval_beside_every_verdict_agrees_with_it():
    """Issue 49: ``ci_holm`` excludes the null (or lies inside or beyond the margin) exactly when the verdict
    says so, for every kind, at the level Holm's correction gave the claim."""
    verdicts = set()
    for family_seed in range(8):
        rng = np.random.default_rng(family_seed)
        family = {}
        for k in range(10):
            kind = ("greater", "less", "not_less", "not_greater", "equivalent")[k % 5]
            a, b = arms(rng.normal(0, 0.8), 0.0, seeds=int(rng.integers(3, 7)), items=40, seed_sd=0.3,
                        rng_seed=int(rng.integers(1 << 30)))
            family[f"claim {k}"] = (Claim("p", kind=kind, margin=None if kind in ("greater", "less") else 0.3),
                                    compare(a, b, n_samples=400))
        judged = judge_family(family)
        assert all(interval_agrees(entry) for entry in judged.values())
        verdicts |= {(entry["kind"], entry["verdict"]) for entry in judged.values()}
    assert {("greater", "✓"), ("less", "✗"), ("not_less", "?"), ("not_greater", "✓")} <= verdicts
    broken = {**judged["claim 0"], "ci_holm": [1.0, 2.0], "verdict": "?"}
    assert not interval_agrees(broken)


def test_the_minimum_detectable_effect_has_the_stated_power():
    seed_level = {"se": 0.5, "df": 4.0}
    mde = minimum_detectable_effect(seed_level, 0.01, two_sided=True)
    critical = stats.t.isf(0.005, 4)
    assert stats.nct.sf(critical, 4, mde / 0.5) == pytest.approx(POWER, abs=1e-6)
    assert mde > minimum_detectable_effect(seed_level, 0.05, two_sided=True) > \
        minimum_detectable_effect(seed_level, 0.05, two_sided=False)
    assert minimum_detectable_effect({"se": None, "df": None}, 0.05, True) is None
    a, b = arms(0.0, 0.0, seeds=5, seed_sd=0.3)
    entry = judge_family({"open": (Claim("p"), compare(a, b))})["open"]
    assert entry["verdict"] == "?" and entry["mde"] > abs(entry["effect"])


def test_margin_kinds_need_a_margin():
    with pytest.raises(ValueError, match="margin"):
        Claim("p", kind="equivalent")
    with pytest.raises(ValueError, match="kind"):
        Claim("p", kind="better")


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "dog"]), min_size=0, max_size=9),
       st.integers(0, 3))
def test_the_bootstrap_bleu_is_sacrebleus_corpus_bleu(words, cut):
    hypotheses = [" ".join(words), " ".join(words[cut:]), "the cat sat on the mat"]
    references = [["the cat sat on the mat", "a cat sat"], ["a dog sat on a mat", "the dog"], ["the cat sat on a mat", "x"]]
    statistics = bleu_statistics(hypotheses, references)
    assert float(bleu_score(statistics.sum(axis=0))) == pytest.approx(corpus_bleu(hypotheses, references), abs=1e-9)


def test_ratio_scores_are_the_corpus_measures():
    sure, possible = [{(0, 0), (1, 1)}, {(0, 1)}], [set(), {(1, 1)}]
    predicted = [{(0, 0), (1, 0)}, {(1, 1)}]
    counts = np.array([[len(a & s), len(a & (p | s)), len(a), len(s)] for a, s, p in zip(predicted, sure, possible)])
    assert float(aer_score(counts.sum(0))) == pytest.approx(aer(predicted, sure, possible))
    assert float(ratio_score(np.array([3.0, 4.0]))) == 0.75


def test_the_worked_example_of_the_reproducibility_appendix_prints_what_it_says(capsys):
    from pathlib import Path

    page = (Path(__file__).parents[1] / "book" / "appendix" / "reproducibility.md").read_text()
    section = page.split("## How a claim is judged")[1]
    code = section.split("```python\n")[1].split("```")[0]
    exec(compile(code, "reproducibility.md", "exec"), {})
    printed = capsys.readouterr().out.split()
    claimed = [line.rsplit("# ", 1)[1].strip() for line in code.splitlines() if line.startswith("print(")]
    assert printed == claimed == ["?", "✓"]


def test_the_appendix_states_the_margins_and_the_tie_bound_gap_the_code_uses():
    from pathlib import Path

    from sparse_tutorial.experiments.alignment import claims as alignment_claims

    from sparse_tutorial.experiments.interpretability import claims as interpretability_claims

    from sparse_tutorial.experiments.nmt import claims as nmt_claims

    from sparse_tutorial.experiments.summarization import claims as summarization_claims
    from sparse_tutorial.stats.inference import ACCURACY_MARGIN
    text = " ".join((Path(__file__).resolve().parent.parent / "book" / "appendix" / "reproducibility.md").read_text().split())
    assert ACCURACY_MARGIN == 0.01 and "one accuracy point (`ACCURACY_MARGIN`, chapters 12 and 14)" in text
    assert nmt_claims.BLEU_MARGIN == 0.5 and "0.5 BLEU (chapter 10)" in text
    assert (alignment_claims.SHUFFLE_NLL_GAP, alignment_claims.UNIFORM_ENTROPY_GAP) == (0.5, 0.5)
    assert "at least 0.5 nats per word" in text and "at least 0.5 nats per word below uniform" in text
    assert summarization_claims.PAR_MARGIN == 1.0 and "1 ROUGE-L point (chapter 11)" in text
    assert interpretability_claims.ENTROPY_MARGIN == 0.1 and "0.1 of normalized entropy (chapter 13)" in text
    assert interpretability_claims.TIE_BOUND_GAP == 0.05 and "τ-b within 0.05 of the cap" in text


STANDARD_RESULTS = ("nmt", "alignment", "classification", "explanation", "summarization", "interpretability")
"""Every stored results file: all are judged by the inference standard (nmt's grid is judged as it grows,
issue 29: a claim whose runs are missing is "not tested" and says why)."""


@pytest.mark.parametrize("name", STANDARD_RESULTS)
def test_every_stored_claim_carries_what_the_standard_asks(name):
    """Issue 30's 'done when': effect, 95 % interval, raw and Holm-adjusted p, trained seeds (at least
    MIN_SEEDS, else "not tested"), a verdict of the four, a margin for the margin kinds, and a verdict that
    follows from the stored numbers."""
    from sparse_tutorial.experiments import load_results
    from sparse_tutorial.stats.inference import KINDS, MIN_SEEDS, VERDICTS

    claims = load_results(name)["checks"]["claims"]
    assert claims
    for claim, entry in claims.items():
        assert entry["verdict"] in VERDICTS and entry["kind"] in KINDS, claim
        if entry["verdict"] == "not tested":
            assert entry["reason"], claim
            continue
        assert {"effect", "ci95", "p", "p_holm", "seeds", "paper", "paper_effect"} <= set(entry), claim
        assert min(entry["seeds"]) >= MIN_SEEDS and entry["p"] <= entry["p_holm"] <= 1, claim
        assert (entry["margin"] is not None) == (entry["kind"] not in ("greater", "less")), claim
        assert entry["verdict"] == verdict(**{key: entry[key] for key in VERDICT_FIELDS})
        assert interval_agrees(entry), claim            # issue 49: the interval beside a verdict agrees with it
        assert entry["verdict"] != "?" or entry["mde"] is not None or entry["seed_level"]["se"] is None, claim


def test_the_hierarchical_bootstrap_is_scipys_bootstrap_in_its_one_level_case():
    """Issue 49: the hand-written hierarchical bootstrap, with one seed, resamples test items only: its
    percentile interval is ``scipy.stats.bootstrap``'s of the paired differences' mean (up to Monte-Carlo
    error), and its seed-level test is scipy's paired t-test."""
    rng = np.random.default_rng(3)
    a_values, b_values = rng.normal(0.3, 1.0, 400), rng.normal(0.0, 1.0, 400)
    one_seed = compare(np.stack([a_values, np.ones(400)], -1)[None], np.stack([b_values, np.ones(400)], -1)[None],
                       n_samples=8000)
    reference = stats.bootstrap((a_values - b_values,), np.mean, method="percentile", n_resamples=8000,
                                random_state=np.random.default_rng(4)).confidence_interval
    width = reference.high - reference.low
    assert one_seed.ci95 == pytest.approx((reference.low, reference.high), abs=0.05 * width)
    seeds_a, seeds_b = [31.2, 29.8, 30.5, 31.9], [30.1, 29.9, 29.0, 30.2]
    ours = paired_t(seeds_a, seeds_b)
    scipys = stats.ttest_rel(seeds_a, seeds_b)
    assert ours["ci95"] == pytest.approx(list(scipys.confidence_interval(0.95)))
    assert ours["df"] == scipys.df


@pytest.mark.parametrize("name", STANDARD_RESULTS)
def test_monte_carlo_error_cannot_move_a_stored_verdict(name):
    """Issue 49: where a claim's p is the bootstrap's (its seed-level test's is smaller), the true bootstrap p
    lies, with 99.9 % confidence, in the Clopper–Pearson interval of its count of resamples; both ends, times
    Holm's factor for the claim, fall on the same side of α, so another draw of resamples gives the same
    verdict."""
    from sparse_tutorial.experiments import load_results
    from sparse_tutorial.stats.inference import BOOTSTRAP_SAMPLES

    for claim, entry in load_results(name)["checks"]["claims"].items():
        if entry["verdict"] == "not tested":
            continue
        seed_part = seed_test(entry["kind"], entry["margin"], entry["seed_level"])
        if seed_part is not None and entry["p"] <= seed_part[1] * (1 + 1e-9):
            continue                                       # the exact seed-level test set p
        count = round(entry["p"] * (BOOTSTRAP_SAMPLES + 1) - 1)
        interval = stats.binomtest(count, BOOTSTRAP_SAMPLES).proportion_ci(0.999, method="exact")
        factor = entry["p_holm"] / entry["p"]
        assert (interval.low * factor < ALPHA) == (interval.high * factor < ALPHA), claim


def test_seeds_needed_is_the_fewest_seeds_whose_mde_reaches_the_effect():
    from sparse_tutorial.stats.inference import minimum_detectable_effect, seeds_needed

    entry = {"kind": "greater", "level": 0.01, "seed_level": {"se": 2.0 / math.sqrt(5), "df": 4}}   # sd 2 over 5 seeds
    at_ten = minimum_detectable_effect({"se": 2.0 / math.sqrt(10), "df": 9}, 0.01, True)
    assert seeds_needed(entry, at_ten) == 10 and seeds_needed(entry, -at_ten) == 10
    assert seeds_needed(entry, at_ten * 1.001) == 10 and seeds_needed(entry, at_ten * 0.999) == 11
    assert seeds_needed(entry, 1e-4) is None and seeds_needed(entry, 0.0) is None
    assert seeds_needed({**entry, "kind": "not_less"}, 1.0) is None
    assert seeds_needed({**entry, "seed_level": {"se": None, "df": None}}, 1.0) is None
