"""The confirmatory designs of chapters 11-14 are derived from their pilots: every designed claim is a claim of
its results file with the same kind, margin and unit and the same per-seed pilot differences; every primary
claim is powered; estimation-only claims are those no affordable number of seeds decides; the arms are the
grid's own runs, their pilot records exist and cost what the design says. The shared machinery says what
the design modules rely on."""
import importlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sparse_tutorial.experiments.nmt import runs_of as nmt_runs_of
from sparse_tutorial.runs.runner import runs_dir
from sparse_tutorial.stats import confirmatory
from sparse_tutorial.stats.design import (
    AFFORDABLE_SEEDS, FAMILIES, Arm, Design, DesignedClaim, added_in, sd_upper_bound, seeds_needed)

RESULTS = Path(__file__).resolve().parents[1] / "book" / "results"
NEW = ("summarization", "classification", "interpretability", "explanation")


def design_of(name: str):
    return importlib.import_module(f"sparse_tutorial.experiments.{name}.design")


def claims_of(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))["checks"]["claims"]


@pytest.mark.parametrize("name", NEW)
def test_every_designed_claim_is_a_claim_of_its_results_file(name):
    stored = claims_of(name)
    for claim, designed in design_of(name).DESIGN.items():
        assert claim in stored, claim
        assert (designed.kind, designed.margin) == (stored[claim]["kind"], stored[claim]["margin"]), claim


@pytest.mark.parametrize("name", NEW)
def test_the_pilot_differences_are_those_of_the_stored_seeds(name):
    module, stored = design_of(name), claims_of(name)
    for claim, designed in module.DESIGN.items():
        seed_level = stored[claim]["seed_level"]
        pilot = len(module.PILOT_SEEDS)
        differences = np.subtract(seed_level["a"][:pilot], seed_level["b"][:pilot])
        assert designed.pilot_differences == pytest.approx(differences, rel=1e-3, abs=1e-9), claim
        assert designed.unit == stored[claim]["unit"], claim
        assert designed.powered_for == pytest.approx(differences.mean(), rel=1e-3, abs=1e-9), claim
        assert designed.sd == pytest.approx(sd_upper_bound(differences.std(ddof=1), pilot - 1), rel=2e-3), claim


@pytest.mark.parametrize("name", ("nmt",) + NEW)
def test_families_are_apart_primary_claims_powered_and_estimation_beyond_reach(name):
    design = design_of(name).CONFIRMATORY
    groups = [set(design.family(family)) for family in FAMILIES + ("estimation",)]
    assert sum(map(len, groups)) == len(design.claims) == len(set.union(*groups)) and groups[0]
    primary = design.family("primary")
    for claim in primary:
        designed = design.claims[claim]
        assert confirmatory.power(designed.kind, designed.powered_for, designed.sd, len(design.fresh_seeds),
                                  len(primary), designed.margin) >= confirmatory.POWER_TARGET, claim
    for claim, designed in design.claims.items():
        needed = seeds_needed(designed.kind, designed.powered_for, designed.sd, designed.margin)
        beyond = needed is None or needed > AFFORDABLE_SEEDS
        assert beyond == (designed.family == "estimation"), claim


@pytest.mark.parametrize("name", NEW)
def test_fresh_seeds_are_ten_never_run_seeds(name):
    module = design_of(name)
    stored = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    assert stored["profile"] == module.PROFILE and stored["seeds"] == len(module.PILOT_SEEDS)
    assert module.FRESH_SEEDS == tuple(range(5, 15)) and not set(module.FRESH_SEEDS) & set(module.PILOT_SEEDS)


@pytest.mark.parametrize("name", NEW)
def test_the_arms_are_the_grids_runs_and_cost_what_their_pilot_did(name):
    module = design_of(name)
    design, folder = module.CONFIRMATORY, runs_dir(name, module.PROFILE, RESULTS)
    assert {arm for designed in design.claims.values() for arm in designed.arms} <= set(design.arms)
    for arm_name, arm in design.arms.items():
        paths = [folder / f"{arm.run(module.PROFILE, seed).key}.json" for seed in module.PILOT_SEEDS]
        assert all(path.is_file() for path in paths), arm_name
        seconds = np.mean([json.loads(path.read_text(encoding="utf-8"))["seconds"] for path in paths])
        assert arm.seconds == pytest.approx(seconds, abs=0.5), arm_name


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=RESULTS, capture_output=True, text=True)


@pytest.mark.parametrize("name", ("nmt", *NEW))
def test_every_fresh_record_was_made_by_committed_code_after_its_design_was_committed(name):
    if git("rev-parse", "--is-shallow-repository").stdout.strip() != "false":
        pytest.skip("needs the repository's whole history")
    module = design_of(name)
    fixed = added_in(module.__file__)
    fresh = (nmt_runs_of(module.PROFILE, len(module.PILOT_SEEDS)) if name == "nmt"
             else module.CONFIRMATORY.fresh_runs())
    folder = runs_dir(name, module.PROFILE, RESULTS)
    records = [folder / f"{run.key}.json" for run in fresh if run.get("seed") in module.FRESH_SEEDS]
    for path in filter(Path.is_file, records):
        identity = json.loads(path.read_text(encoding="utf-8"))["identity"]
        assert not identity["git_dirty"], path.name
        assert git("merge-base", "--is-ancestor", fixed, identity["git_commit"]).returncode == 0, path.name


def test_the_fresh_runs_train_every_seed_of_the_primary_arms_first():
    design = design_of("summarization").CONFIRMATORY
    runs, primary = design.fresh_runs(), design.family_arms("primary")
    assert len(runs) == len(design.fresh_seeds) * sum(map(len, design.training_groups()))
    first = runs[:len(design.fresh_seeds) * len(primary)]
    assert {run["name"] for run in first} == set(primary) and [run["seed"] for run in first[::len(primary)]] == [
        *design.fresh_seeds]
    assert design.cpu_hours() == pytest.approx(sum(design.arms[run["name"]].seconds for run in runs) / 3600)


def toy(family_of: dict) -> Design:
    claims = {name: DesignedClaim.from_pilot("A", "B", "greater", family, "points", ("A", "B"), pilot)
              for name, (family, pilot) in family_of.items()}
    return Design(claims, "medium", (0, 1, 2), tuple(range(3, 13)),
                  arms={"A": Arm("system", {"name": "A"}, 60.0), "B": Arm("system", {"name": "B"}, 120.0)})


def test_a_claim_from_its_pilot_is_powered_with_the_upper_bound_of_its_own_sd():
    designed = toy({"c": ("primary", (1.0, 2.0, 3.0))}).claims["c"]
    assert designed.powered_for == 2.0 and designed.sd == pytest.approx(sd_upper_bound(1.0, 2))
    assert sd_upper_bound(1.268, 14) == pytest.approx(1.542, abs=5e-4)  # chapter 10's pooled sd


def test_a_family_is_judged_on_its_fresh_seeds_only_and_only_on_all_of_them():
    design = toy({"c": ("primary", (1.0, 2.0, 3.0)), "d": ("secondary", (1.0, 1.5, 2.0))})
    differences = {"c": {s: 2.0 + 0.1 * s for s in range(13)}, "d": {s: 1.0 for s in range(3, 12)}}
    judged = design.judge_family("primary", differences)
    assert judged["c"].verdict == "✓" and len(judged["c"].differences) == 10
    assert design.judge_family("secondary", differences) == {"d": None}


def test_the_fresh_runs_extend_only_the_pilots_grid():
    design = toy({"c": ("primary", (1.0, 2.0, 3.0))})
    assert design.runs_extending("medium", 3) == design.fresh_runs() and len(design.fresh_runs()) == 20
    assert design.runs_extending("medium", 1) == [] and design.runs_extending("quick", 3) == []


def test_the_section_judges_families_on_fresh_seeds_and_estimates_over_every_seed():
    design = toy({"c": ("primary", (1.0, 2.0, 3.0)), "e": ("estimation", (0.1, -0.3, 0.4))})
    differences = {"c": {s: 2.0 + 0.1 * s for s in range(13)}, "e": {s: (-1.0) ** s for s in range(6)}}
    section = design.section(differences, {"A": list(range(3, 13)), "B": list(range(3, 13))}, __file__)
    primary = section["families"]["primary"]["c"]
    assert primary["judged"]["verdict"] == "✓" and list(primary["judged"]["differences"]) == [
        2.0 + 0.1 * s for s in range(3, 13)] and primary["fresh_seeds"] == {"A": [*range(3, 13)], "B": [*range(3, 13)]}
    assert primary["power"] == design.table()["c"]["power"] and section["families"]["secondary"] == {}
    estimated = section["estimation"]["e"]
    assert estimated["seeds"] == [*range(6)] and estimated["mean"] == 0.0 and estimated["ci95"][0] < 0 < estimated["ci95"][1]
    assert section["fresh_seeds"] == [*range(3, 13)] and section["commit"] == added_in(__file__)
    assert design.section({}, {}, __file__)["families"]["primary"]["c"]["judged"] is None


def test_a_results_section_judges_the_fresh_seeds_apart_on_the_arms_stored_at_every_one_of_them():
    claims = {"c": DesignedClaim.from_pilot("A", "B", "greater", "primary", "points", ("A", "B"), (1.0, 2.0, 3.0)),
              "d": DesignedClaim.from_pilot("C", "B", "greater", "secondary", "points", ("C", "B"), (0.5, 1.0, 2.0))}
    design = Design(claims, "medium", (0, 1, 2), tuple(range(3, 13)),
                    arms={name: Arm("system", {"name": name}, 60.0) for name in "ABC"})
    done = {arm.run("medium", seed) for name, arm in design.arms.items() for seed in range(13)
            if name != "C" or seed < 12}                     # C, trained last, misses the last fresh seed
    judged_on = []

    def judge_fresh(runs):   # c: A's seed minus 0; d judged on whatever it is given, as a sweep on fewer λ would be
        judged_on.append(runs)
        seeds = [run["seed"] for run in runs if run["name"] == "A"]
        return {"c": {"verdict": "✓", "seed_level": {"a": [float(seed) for seed in seeds], "b": [0.0] * len(seeds)}},
                "d": {"verdict": "✓", "seed_level": {"a": [9.0] * len(seeds), "b": [0.0] * len(seeds)}}}

    pilot = {name: {"seed_level": {"a": list(designed.pilot_differences), "b": [0.0] * 3}}
             for name, designed in claims.items()}
    assert design.judged_apart(design.stored(done)) == ([*range(3, 13)], ["A", "B"])
    section = design.results_section(pilot, done, judge_fresh, __file__)
    assert judged_on == [[design.arms[arm].run("medium", seed) for arm in "AB" for seed in range(3, 13)]]
    primary, secondary = section["families"]["primary"]["c"], section["families"]["secondary"]["d"]
    assert list(primary["judged"]["differences"]) == [float(seed) for seed in range(3, 13)]
    assert secondary["judged"] is None and secondary["fresh_seeds"] == {"C": [*range(3, 12)], "B": [*range(3, 13)]}
    one_seed = {run for run in done if run["seed"] < 4}
    assert design.judged_apart(design.stored(one_seed)) == ([], [])
    assert design.results_section(pilot, one_seed, None, __file__)["families"]["primary"]["c"]["judged"] is None


def test_a_claim_not_tested_on_all_its_fresh_seeds_is_not_tested_for_good_and_pending_before():
    claims = {"c": DesignedClaim.from_pilot("A", "B", "greater", "primary", "points", ("A", "B"), (1.0, 2.0, 3.0))}
    design = Design(claims, "medium", (0, 1, 2), tuple(range(3, 13)),
                    arms={name: Arm("system", {"name": name}, 60.0) for name in "AB"})
    pilot = {"c": {"verdict": "✓", "seed_level": {"a": [1.0, 2.0, 3.0], "b": [0.0] * 3}}}

    def untested(runs):   # the experiment's precondition fails on the fresh seeds: no seed_level, a reason
        return {"c": {"verdict": "not tested", "reason": "τ-b sits at its tie bound"}}

    def entry(last_seed):
        done = {arm.run("medium", seed) for arm in design.arms.values() for seed in range(last_seed + 1)}
        return design.results_section(pilot, done, untested, __file__)["families"]["primary"]["c"]

    assert entry(12)["judged"] is None and entry(12)["not_tested"] == "τ-b sits at its tie bound"
    assert entry(11)["judged"] is None and entry(11)["not_tested"] is None   # seed 12 is not stored: pending


def test_seeds_needed_agrees_with_the_exact_tests_power():
    for kind, margin in (("greater", None), ("not_less", 0.5)):
        mde = confirmatory.minimum_detectable_effect(kind, 1.0, 10, 1, margin)
        effect = mde if kind == "greater" else mde - 0.5
        assert 9 <= seeds_needed(kind, effect, 1.0, margin) <= 12
    assert seeds_needed("greater", 0.0, 1.0) is None and seeds_needed("greater", 0.01, 1.0) is None


def test_describe_shows_each_claims_own_sd_and_the_plan_when_arms_are_named():
    design = toy({"c": ("primary", (1.0, 2.0, 3.0)), "e": ("estimation", (0.1, -0.3, 0.4))})
    text = design.describe()
    assert f"sd {sd_upper_bound(1.0, 2):.2f} points" in text.splitlines()[1] and "estimation only" in text
    assert "20 runs, about 0.5 hours of one core" in text and "  primary: A, B" in text
    pooled = design_of("nmt").describe().splitlines()   # one sd for every claim, in the header; no arms named
    assert not [line for line in pooled[1:] if " sd " in line] and len(pooled) == 1 + len(design_of("nmt").DESIGN)


@pytest.mark.parametrize("name", ("nmt",) + NEW)
def test_the_command_prints_every_design(name, capsys, monkeypatch):
    monkeypatch.setattr(design_of(name), "describe", lambda: f"the design of {name}")
    monkeypatch.setattr("sys.argv", ["confirmatory", name])
    source = Path(confirmatory.__file__).read_text(encoding="utf-8")
    exec(compile(source, confirmatory.__file__, "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip() == f"the design of {name}"
    assert name in source.split("usage:")[1].split("print(")[0]
