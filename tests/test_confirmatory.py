"""The confirmatory designs: the exact signed-rank test, its interval and verdict agree; power and MDE are
what the test achieves; the NMT design is what its pilot says and powers every primary claim."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from sparse_tutorial.stats import confirmatory as c
from sparse_tutorial.experiments.nmt import design, runs_of
from sparse_tutorial.experiments.nmt.results import confirmatory as assemble_confirmatory

RESULTS = Path(__file__).resolve().parents[1] / "book" / "results"


def test_the_null_distribution_is_the_exact_one():
    null = c.signed_rank_null(4)
    assert null.sum() == pytest.approx(1.0) and len(null) == 11 and null[0] == 1 / 16 and null[5] == 2 / 16


@pytest.mark.parametrize("tail", [0.025, 0.0125, 0.005, 0.05 / 3])
def test_the_interval_is_the_set_of_shifts_scipy_does_not_reject(tail):
    rng = np.random.default_rng(7)
    for _ in range(40):
        d = rng.normal(rng.normal(), 1.5, rng.integers(6, 13))
        low, high = c.signed_rank_interval(d, tail)
        if not math.isfinite(low):  # no shift can be rejected: even all signs alike are not that rare
            assert 0.5 ** len(d) >= tail
            continue
        for shift, alternative, rejected in ((low - 1e-9, "greater", True), (low + 1e-9, "greater", False),
                                             (high + 1e-9, "less", True), (high - 1e-9, "less", False)):
            p = stats.wilcoxon(d - shift, alternative=alternative, method="exact").pvalue
            assert (p < tail) == rejected


def test_too_few_seeds_give_an_infinite_interval_and_no_verdict():
    judged = c.judge("greater", [1.0, 2.0, 3.0], family_size=3)
    assert judged.interval == (-math.inf, math.inf) and judged.verdict == "?"
    assert c.minimum_detectable_effect("greater", 1.0, 3, 3) == math.inf and c.power("greater", 9.0, 1.0, 3, 3) == 0


@pytest.mark.parametrize("kind,differences,margin,expected", [
    ("greater", [2.1, 1.4, 3.0, 2.2, 1.9, 2.5, 1.1, 2.8, 3.3, 1.7], None, "✓"),
    ("greater", [-2.1, -1.4, -3.0, -2.2, -1.9, -2.5, -1.1, -2.8, -3.3, -1.7], None, "✗"),
    ("less", [0.3, -0.2, 0.1, -0.5, 0.4, -0.1, 0.2, -0.3, 0.6, -0.4], None, "?"),
    ("not_greater", [-4.4, -6.1, -5.1, -5.0, -4.8, -5.5, -3.9, -6.2, -4.6, -5.3], 0.5, "✓"),
    ("not_greater", [2.4, 3.1, 2.1, 2.0, 2.8, 2.5, 1.9, 3.2, 2.6, 2.3], 0.5, "✗"),
])
def test_the_verdict_is_read_off_the_interval_that_is_printed(kind, differences, margin, expected):
    judged = c.judge(kind, differences, family_size=3, margin=margin)
    assert judged.verdict == expected == c.verdict_from_interval(kind, judged.interval, margin)
    assert judged.level == pytest.approx(1 - 0.05 / 3 if kind in ("greater", "less") else 1 - 2 * 0.05 / 3)
    decided = judged.verdict != "?"
    assert (judged.p < 0.05 / 3) == decided or kind == "not_greater"  # a ✗ of a margin kind has its own side


def test_power_rises_with_the_effect_and_the_mde_is_where_it_reaches_80_percent():
    powers = [c.power("greater", effect, 1.5, 10, 3) for effect in (0.5, 1.5, 3.0)]
    assert powers[0] < powers[1] < powers[2] and powers[2] > 0.99
    mde = c.minimum_detectable_effect("greater", 1.5, 10, 3)
    assert c.power("greater", mde, 1.5, 10, 3) >= 0.8 > c.power("greater", 0.9 * mde, 1.5, 10, 3)


def test_clopper_pearson_is_exact():
    low, high = c.clopper_pearson(1, 3)
    assert low == pytest.approx(stats.beta.ppf(0.025, 1, 3)) and high == pytest.approx(stats.beta.ppf(0.975, 2, 2))
    with pytest.raises(ValueError, match="successes"):
        c.clopper_pearson(4, 3)


def test_the_nmt_design_is_its_pilot():
    """The pilot numbers fixed in the design are those of the stored 3-seed grid."""
    per_seed = json.loads((RESULTS / "nmt.json").read_text(encoding="utf-8"))["per_seed"]
    bleu = {arm: {row["seed"]: row["bleu"] for row in rows if row["seed"] in design.PILOT_SEEDS}
            for arm, rows in per_seed.items()}
    for claim, designed in design.DESIGN.items():
        pilot = [bleu[designed.a][s] - bleu[designed.b][s] for s in design.PILOT_SEEDS]
        assert pilot == pytest.approx(designed.pilot_differences, abs=0.006), claim
    unpenalised = ("+Coverage", "+Sparsemax", "+L∞", "+Temp 0.8", "+Temp 0.2", "+Temp 0.1", "+Gumbel")
    residuals = [d - np.mean(ds) for ds in ([bleu[a][s] - bleu["NMT"][s] for s in design.PILOT_SEEDS]
                                            for a in unpenalised) for d in ds]
    assert math.sqrt(sum(r * r for r in residuals) / design.PILOT_DF) == pytest.approx(design.PILOT_SD, abs=5e-4)
    collapsed = [row for row in per_seed["+Entropy"] if design.collapsed(row["entropy_per_token"])]
    assert [row["seed"] for row in collapsed] == [1]


def test_every_primary_claim_is_powered_and_the_families_are_apart():
    table = design.design_table()
    assert all(row["power"] >= 0.8 for row in table.values() if row["family"] == "primary")
    assert len(design.FRESH_SEEDS) >= 10 and not set(design.FRESH_SEEDS) & set(design.PILOT_SEEDS)
    assert {row["family"] for row in table.values()} == {"primary", "secondary", "estimation"}


def test_the_medium_grid_trains_every_fresh_seed_of_the_primary_arms_first():
    runs = runs_of("medium", 3)
    fresh = [r for r in runs if r.kind == "system" and r["seed"] in design.FRESH_SEEDS]
    groups = design.training_groups()
    assert len(fresh) == len(design.FRESH_SEEDS) * sum(map(len, groups))
    primary = len(design.FRESH_SEEDS) * len(groups[0])
    assert all(r["seed"] in design.FRESH_SEEDS for r in fresh[:primary]) and runs.index(fresh[0]) > 40
    assert not [r for r in runs_of("quick", 1) if r.kind == "system" and r["seed"] in design.FRESH_SEEDS]
    assert len(runs_of("medium", 1)) < len(runs_of("medium", 3)) - len(fresh)  # no pilot, nothing to confirm


def test_a_family_is_judged_only_on_all_its_fresh_seeds():
    rng = np.random.default_rng(0)
    arms = design.arms("primary")
    bleu = {arm: {s: 30 + rng.normal() for s in design.FRESH_SEEDS} for arm in arms}
    bleu["+Gumbel"] = {s: v - 5 for s, v in bleu["NMT"].items()}
    judged = design.judge_family("primary", bleu)
    assert judged["+Gumbel no better than NMT (Table I)"].verdict == "✓"
    del bleu["+Temp 0.2"][12]
    assert design.judge_family("primary", bleu)["+Temp 0.2 hurts BLEU (Table I)"] is None


def test_the_assembled_design_keeps_pilot_and_fresh_collapses_apart():
    pilot = {"+Entropy": [{"seed": s, "bleu": b, "entropy_per_token": e}
                          for s, b, e in ((0, 30.6, 1.84), (1, 9.0, 0.006), (2, 26.4, 1.80))],
             "NMT": [{"seed": s, "bleu": b, "entropy_per_token": 2.2} for s, b in ((0, 32.3), (1, 30.2), (2, 29.7))]}
    training = {"+Entropy": [{"dev_entropy": curve} for curve in ([0.5, 1.5], [0.01, 0.02], [0.9, 1.2])],
                "NMT": [{"dev_entropy": [1.8, 2.0]}] * 3}
    fresh = {"+Entropy": {s: {"bleu": 28.0, "entropy_per_token": 0.5 if s == 3 else 1.9,
                              "dev_entropy": [0.4, 0.6] if s == 3 else [0.7, 1.9]} for s in design.FRESH_SEEDS}}
    section = assemble_confirmatory(pilot, training, fresh)
    assert section["collapse"]["pilot"]["+Entropy"]["collapsed"] == 1
    assert section["collapse"]["fresh"]["+Entropy"] == {"collapsed": 1, "seeds": 10, "share": 0.1,
                                                        "ci95": list(c.clopper_pearson(1, 10))}
    assert section["families"]["primary"]["+Entropy beats NMT (Table I)"]["judged"] is None  # NMT has no fresh seed
    runs = section["collapse_runs"]
    assert len(runs) == 13 and {run["arm"] for run in runs} == {"+Entropy"}  # every penalised run, no other
    assert [run["spread_epoch"] for run in runs if run["seeds"] == "pilot"] == [2, None, 2]
    assert section["collapse_by_bleu"]["bleu_ceiling"] == 9.0


APPENDIX = Path(__file__).resolve().parents[1] / "book" / "appendix" / "reproducibility.md"


def test_the_appendix_shows_the_design_the_code_fixes_and_its_worked_example_prints_what_it_says(capsys):
    page = APPENDIX.read_text(encoding="utf-8")
    generated = page.split("<!-- generated: python -m sparse_tutorial.stats.confirmatory nmt")[1]
    assert generated.split("```text\n")[1].split("```")[0].rstrip("\n") == design.describe()
    code = page.split("### A confirmatory design")[1].split("```python\n")[1].split("```")[0]
    exec(compile(code, "reproducibility.md", "exec"), {})
    printed = capsys.readouterr().out.strip().splitlines()
    claimed = [line.rsplit("# ", 1)[1].strip() for line in code.splitlines() if line.startswith("print(")]
    assert printed == claimed
