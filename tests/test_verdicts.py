"""The verdict rule and the tests every experiment's claims use (stats/verdicts.py)."""
import numpy as np
import pytest

from sparse_tutorial.stats.design import Arm, Design, DesignedClaim
from sparse_tutorial.stats.inference import Claim, compare, judge_family
from sparse_tutorial.stats.verdicts import (claims_table, described_claim, design_agrees, design_summary,
                                            design_table, markdown_escaped, markdown_table, number_text, p_text,
                                            verdicts_in_brief)
from sparse_tutorial.training import epoch_generator, epoch_seed


def judged(*effects: float, seeds: int = 5) -> dict:
    """A family of "greater" claims judged on two arms whose per-seed difference is ``effect`` ± 0.05."""
    rng = np.random.default_rng(0)
    family = {}
    for k, effect in enumerate(effects):
        a = rng.normal(effect, 0.05, (seeds, 30, 1)) + np.linspace(-1, 1, 30)[None, :, None]
        b = np.zeros_like(a) + np.linspace(-1, 1, 30)[None, :, None]
        stack = lambda x: np.concatenate([x, np.ones_like(x)], -1)
        family[f"claim {k}"] = (Claim("the paper", unit="points"), compare(stack(a), stack(b), n_samples=400))
    return judge_family(family)


def torch_randperm(generator):
    import torch
    return torch.randperm(50, generator=generator).tolist()


def test_claims_table_lists_contradictions_first_with_the_interval_of_the_verdict():
    claims = judged(1.0, -1.0, 0.01)
    rows = claims_table(claims)
    assert [row["verdict"] for row in rows] == ["✗", "?", "✓"]
    assert rows[2]["ours"].startswith("+1") and "[" in rows[2]["ours"] and rows[2]["detectable"] == ""
    assert rows[1]["detectable"].startswith("≥ ") and float(rows[1]["p_holm"]) >= float(rows[1]["p"])


def test_verdicts_in_brief_is_a_table_of_every_claim_contradictions_first():
    claims = judged(1.0, -1.0, 0.01, 1.2)
    lines = verdicts_in_brief(claims).splitlines()
    assert lines[0] == "**✗ 1 · ? 1 · ✓ 2** of 4 claims"
    body = [line.split(" | ") for line in lines[4:]]
    assert [(cells[0], cells[1]) for cells in body] == [("| ✗", "claim 1"), ("| ?", "claim 2"), ("| ✓", "claim 0"),
                                                        ("| ✓", "claim 3")]
    assert "[" in body[0][2] and "detectable ≥ " in body[1][2] and "detectable" not in body[2][2]
    assert all(cells[3] == "— |" for cells in body)   # these claims state no effect of the paper
    assert verdicts_in_brief({}).splitlines()[0] == "**✗ 0 · ? 0 · ✓ 0** of 0 claims"


def test_numbers_between_1e_4_and_1e6_are_written_without_an_exponent():
    assert number_text(-130.2, "+.2g") == "-130" and number_text(160.4, ".2g") == "160"
    assert number_text(5e-5, ".2g") == "5e-05" and number_text(0.5, "+.2f") == "+0.50"
    assert number_text(-10.34, "+.3g") == "-10.3"


def test_described_claim_gives_the_numbers_a_sentence_needs():
    claims = judged(1.0, 0.01)
    supported, open_claim = claims["claim 0"], claims["claim 1"]
    low, high = supported["ci_holm"]
    assert described_claim(supported) == (f"✓ (+1.00, interval at Holm's level [{low:+.2f}, {high:+.2f}], "
                                          f"p = {supported['p']:.2g}, {supported['p_holm']:.2g} after Holm)")
    text = described_claim(open_claim, 100, "+.1f", " points", with_verdict=False)
    assert text.startswith("+") and f"no effect below {100 * open_claim['mde']:.1f} points detectable" in text


def test_markdown_table_escapes_bars_and_aligns_columns():
    table = markdown_table([{"a": "x|y", "b": 1}, {"a": "z", "b": 2}], "cr").splitlines()
    assert table == ["| a | b |", "|:-:|--:|", "| x\\|y | 1 |", "| z | 2 |"]
    assert markdown_table([]) == ""


def test_markdown_escaped_keeps_angle_brackets_visible():
    assert markdown_escaped("the pointer removes <unk>") == "the pointer removes \\<unk>"


def test_design_table_shows_verdicts_with_their_interval_pending_claims_and_estimates():
    claims = {name: DesignedClaim.from_pilot("A", "B", "greater", family, "points", ("A", "B"), pilot)
              for name, family, pilot in (("c", "primary", (1.0, 2.0, 3.0)), ("d", "secondary", (0.5, 1.0, 0.0)),
                                          ("e", "estimation", (0.1, -0.3, 0.4)))}
    design = Design(claims, "medium", (0, 1, 2), tuple(range(3, 13)), arms={"A": Arm("system", {}, 1.0),
                                                                           "B": Arm("system", {}, 1.0)})
    differences = {"c": {s: 2.0 + 0.1 * s for s in range(13)}, "d": {s: 1.0 for s in range(3, 8)},
                   "e": {s: (-1.0) ** s for s in range(6)}}
    section = design.section(differences, {"A": list(range(3, 13)), "B": list(range(3, 8))}, __file__)
    primary, secondary, estimated = design_table(section)
    judged = section["families"]["primary"]["c"]["judged"]
    assert primary["verdict"] == "✓" and primary["ours"].startswith(number_text(judged["estimate"], "+.3g"))
    low, high = judged["interval"]
    assert primary["ours"].endswith(f"[{number_text(low, '+.3g')}, {number_text(high, '+.3g')}]") and low > 0
    assert secondary["verdict"] == "pending (5/10 fresh seeds)" and secondary["ours"] == "" and secondary["p"] == ""
    assert estimated["family"] == "estimation" and estimated["verdict"] == "—" and estimated["fresh seeds"] == 3
    assert estimated["ours"].startswith("+0 [")
    untested = design_table(design.section(differences, {"A": list(range(3, 13)), "B": list(range(3, 13))}, __file__,
                                           {"d": "τ-b sits at its tie bound"}))[1]
    assert (untested["verdict"], untested["ours"], untested["p"], untested["detectable"]) == ("not tested", "n/a", "", "")


def test_p_values_are_rounded_once_from_their_unrounded_value():
    assert p_text(1 / 1024) == "0.00098" and p_text(1 / 1024, 3) == "0.000977" and p_text(None) == ""
    assert p_text(0.0019531, 3) == "0.00195" and p_text(0.5) == "0.5"


def test_design_agrees_checks_each_verdict_against_its_interval_and_its_seeds():
    claims = {"c": DesignedClaim.from_pilot("A", "B", "greater", "primary", "points", ("A", "B"), (1.0, 2.0, 3.0))}
    design = Design(claims, "medium", (0, 1, 2), tuple(range(3, 13)), arms={"A": Arm("system", {}, 1.0),
                                                                           "B": Arm("system", {}, 1.0)})
    section = design.section({"c": {s: 2.0 + 0.1 * s for s in range(13)}}, {}, __file__)
    assert design_agrees(section) and design_agrees(design.section({}, {}, __file__))
    judged = section["families"]["primary"]["c"]["judged"]
    assert not design_agrees({**section, "fresh_seeds": section["fresh_seeds"][:9]})
    judged["verdict"] = "?"
    assert not design_agrees(section)
    judged["verdict"], judged["interval"] = "?", (None, None)   # unbounded both ways: undecided
    assert design_agrees(section)


def test_design_summary_counts_each_family_and_names_the_claims_the_fresh_seeds_changed():
    claims = {name: DesignedClaim.from_pilot("A", "B", "greater", family, "points", ("A", "B"), (1.0, 2.0, 3.0))
              for name, family in (("c", "primary"), ("d", "primary"), ("e", "secondary"))}
    design = Design(claims, "medium", (0, 1, 2), tuple(range(3, 13)), arms={"A": Arm("system", {}, 1.0),
                                                                           "B": Arm("system", {}, 1.0)})
    section = design.section({"c": {s: 2.0 for s in range(3, 13)}, "d": {s: -2.0 for s in range(3, 13)}}, {},
                             __file__)
    pilot = {"c": {"verdict": "✓"}, "d": {"verdict": "?"}, "e": {"verdict": "?"}}
    assert design_summary(section, pilot).splitlines() == [
        "- **primary** (2 claims): 1 ✗, 1 ✓", "- **secondary** (1 claim): none judged yet",
        "- *d*: ? on the pilot's seeds, ✗ on the fresh ones"]
    untested = design.section({"c": {s: 2.0 for s in range(3, 13)}}, {}, __file__, {"e": "a precondition failed"})
    assert design_summary(untested, pilot).splitlines() == [
        "- **primary** (2 claims): 1 ✓, 1 pending", "- **secondary** (1 claim): 1 not tested",
        "- *e*: ? on the pilot's seeds, not tested on the fresh ones"]
