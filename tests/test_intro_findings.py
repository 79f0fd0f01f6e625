"""Issue 63: the introduction's findings say what the stored results say. Each finding's numbers and
directions are checked here against the verdicts of the results files' confirmatory designs (the ten or more
trainings that decided them), so a finding that stops holding, or a number that drifts, fails this test."""
from pathlib import Path

import pytest

from sparse_tutorial.experiments import load_results

INTRO = (Path(__file__).resolve().parents[1] / "book" / "intro.md").read_text(encoding="utf-8")

# (results file, claim of its design, verdict, what the intro prints for the estimate, its format)
FINDINGS = [
    ("nmt", "+Entropy beats NMT (Table I)", "✗", "−9.4 BLEU", "{:.1f} BLEU"),
    ("nmt", "+Gumbel no better than NMT (Table I)", "✓", "costs −6.6", "costs {:.1f}"),
    ("nmt", "+Temp 0.2 hurts BLEU (Table I)", "✗", "*gains* +1.7", "*gains* {:+.1f}"),
    ("nmt", "+Temp 0.1 hurts BLEU (Table I)", "✗", "0.1 *gains* +1.3", "0.1 *gains* {:+.1f}"),
    ("summarization", "the pointer improves over ABS", "✓", "+20.7 ROUGE-L", "{:+.1f} ROUGE-L"),
    ("summarization", "coverage improves over the pointer model", "✓", "adds +0.87", "adds {:+.2f}"),
    ("summarization", "the entropy penalty (λ = 0.04) lowers the attention entropy", "✓", "−0.39 nats", "{:.2f} nats"),
    ("classification", "RT: scale 0.001 hurts DP (accuracy at scale 10 minus 0.001)", "✓", "+0.19 to", "{:+.2f} to"),
    ("classification", "20News II: scale 0.001 hurts DP (accuracy at scale 10 minus 0.001)", "✓", "to +0.52", "to {:+.2f}"),
    ("classification", "20News I: scale 0.001 hurts DP (accuracy at scale 10 minus 0.001)", "✓", None, None),
    ("classification", "RT: DP, scale 10: the class favoured by the sign of VᵀW: attention scores above neutral (term D)",
     "✓", None, None),
    ("interpretability", "Table 1, BiLSTM, rotten_tomatoes: sparsemax spreads the inputs' influence on h_p as much as softmax",
     "✓", None, None),
    ("interpretability", "Fig. 3, BiLSTM, rotten_tomatoes: attention agrees less with gradient importance as λ grows", "✗",
     "τ-b +0.68", "τ-b {:+.2f}"),
    ("interpretability", "Fig. 3, BiLSTM, newsgroups:hockey-vs-baseball: attention agrees less with leave-one-out "
     "importance as λ grows (τ over the positions attention keeps)", "✗", "τ-b +0.57", "τ-b {:+.2f}"),
    ("explanation", "learned attention is no more accurate than uniform attention", "✓", None, None),
    ("explanation", "for most sentences an attention far from the model's keeps its decision", "✓", None, None),
]


def judged(name: str, claim: str) -> dict:
    families = load_results(name)["checks"]["design"]["families"]
    entry = next(family[claim] for family in families.values() if claim in family)
    assert entry["judged"] is not None, f"{name}: {claim!r} is not decided yet"
    return entry["judged"]


@pytest.mark.parametrize("name,claim,verdict,printed,template", FINDINGS, ids=[f[1][:40] for f in FINDINGS])
def test_each_finding_of_the_intro_is_the_verdict_of_its_design(name, claim, verdict, printed, template):
    decided = judged(name, claim)
    assert decided["verdict"] == verdict
    if printed is not None:
        assert printed in INTRO, f"the intro no longer says {printed!r}"
        number = "{:" + template.split("{:")[1].split("}")[0] + "}"
        shown = number.format(decided["estimate"]).replace("-", "−")   # the intro prints a minus sign
        assert template.replace(number, shown) == printed


def test_the_findings_section_is_short_and_links_every_experiment_chapter():
    section = INTRO[INTRO.index("## What the book found"):INTRO.index("## What you will be able to do")]
    lines = [line for line in section.splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) <= 12
    for chapter in ("10_sparse_nmt", "11_summarization", "12_attention_text_classification",
                    "13_sparse_interpretability", "14_attention_as_explanation"):
        assert chapter in section
