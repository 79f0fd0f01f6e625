"""Issues 17 and 30: chapter 11's verdicts (experiments/summarization/claims.py) under the inference
standard can come out ✓, ✗, ? and "not tested"."""
import numpy as np

from sparse_tutorial.experiments.summarization.claims import CLAIMS, checks, judge

SEEDS, DOCUMENTS = 3, 300
RNG = np.random.default_rng(1)
BASE = RNG.uniform(10, 60, size=DOCUMENTS)  # each document's difficulty, shared by every system and seed


def run(rouge_shift: float, entropy: float = 2.0, repeated: float = 0.1, unk: float = 0.2, seed: int = 0) -> dict:
    """One seed's result: ROUGE-L per document and the per-document sums of the mechanism measures."""
    rng = np.random.default_rng(seed)
    tokens = np.full(DOCUMENTS, 10.0)
    return {"document_rouge_l": (BASE + rouge_shift + rng.normal(0, 0.5, DOCUMENTS)).tolist(),
            "documents": {"entropy": (tokens * entropy + rng.normal(0, 0.1, DOCUMENTS)).tolist(),
                          "tokens": tokens.tolist(),
                          "repeated_trigrams": (tokens * repeated).tolist(), "trigrams": tokens.tolist(),
                          "unk": (tokens * unk).tolist(), "output_tokens": tokens.tolist()}}


def runs(**systems: dict) -> dict:
    return {name.replace("_", " "): [run(seed=seed, **kwargs) for seed in range(SEEDS)] for name, kwargs in systems.items()}


def named(**kwargs: dict) -> dict:
    names = {"abs": "ABS", "pointer": "ABS+Pointer", "ent01": "ABS+Pointer+Ent (λ=0.01)",
             "ent02": "ABS+Pointer+Ent (λ=0.02)", "ent04": "ABS+Pointer+Ent (λ=0.04)", "cov": "ABS+Pointer+Cov",
             "covent": "ABS+Pointer+Cov+Ent (λ=0.02)"}
    return {names[key]: [run(seed=seed, **value) for seed in range(SEEDS)] for key, value in kwargs.items()}


LEAD = {"Lead-1": (BASE + 0.1).tolist(), "Lead-3": (BASE - 20).tolist()}


def test_every_claim_is_judged_and_each_verdict_is_reachable():
    systems = named(abs=dict(rouge_shift=0, unk=0.5), pointer=dict(rouge_shift=5), ent01=dict(rouge_shift=5, entropy=1.5),
                    ent02=dict(rouge_shift=5, entropy=1.5), ent04=dict(rouge_shift=8, entropy=1.0),
                    cov=dict(rouge_shift=3, repeated=0.02), covent=dict(rouge_shift=0.05, entropy=1.5, repeated=0.02))
    verdicts = {name: entry["verdict"] for name, entry in judge(systems, LEAD).items()}
    assert set(verdicts) == set(CLAIMS)
    assert verdicts["the pointer improves over ABS"] == "✓"
    assert verdicts["+Ent (λ = 0.01) improves over the pointer model"] == "?"
    assert verdicts["+Ent (λ = 0.04) improves over the pointer model"] == "✓"
    assert verdicts["λ = 0.04 beats λ = 0.01"] == "✓"
    assert verdicts["coverage improves over the pointer model"] == "✗"
    assert verdicts["the best abstractive system is on par with Lead-1"] == "✓"
    assert verdicts["the best abstractive system is on par with Lead-3"] == "✗"
    assert verdicts["the entropy penalty (λ = 0.04) lowers the attention entropy"] == "✓"
    assert verdicts["the pointer removes <unk> on OOV-heavy documents"] == "✓"


def test_an_intervention_that_did_not_act_is_not_tested():
    systems = named(abs=dict(rouge_shift=0), pointer=dict(rouge_shift=5), cov=dict(rouge_shift=8))  # same repetition
    judged = judge(systems, LEAD)
    entry = judged["coverage improves over the pointer model"]
    assert entry["verdict"] == "not tested" and "did not move its repeated_trigrams" in entry["reason"]
    assert judged["Cov+Ent improves over Cov"]["verdict"] == "not tested"  # not run
    assert judged["coverage reduces repeated trigrams"]["verdict"] == "?"  # the mechanism claim itself is judged


def test_checks_report_seeds_documents_and_mechanisms():
    systems = named(abs=dict(rouge_shift=0, unk=0.5), pointer=dict(rouge_shift=5))
    result = checks(systems, LEAD, DOCUMENTS, [SEEDS, SEEDS])
    assert (result["seeds"], result["n_test"]) == (SEEDS, DOCUMENTS)
    assert result["mechanism"]["ABS+Pointer"]["measure"] == "unk_oov" and result["mechanism"]["ABS+Pointer"]["acted"]
    tested = [entry for entry in result["claims"].values() if entry["verdict"] != "not tested"]
    assert tested and all(entry["p"] <= entry["p_holm"] and entry["seeds"] == [SEEDS, SEEDS] for entry in tested)
