"""Issue 17: Sun & Lu's claims judged by tests that can come out ✓, ✗ or ? (classification_claims), on fakes:
per-document correctness for Table 2's accuracy claims, per-token score lists for Figs. 2-5."""
import pytest

from sparse_tutorial.experiments.classification_claims import TABLE_2_SCALES, judge

RIGHT = [1] * 200                    # every test document right
HALF = [1, 0] * 100                  # half of them
ALMOST = [0] + [1] * 199             # one document fewer than RIGHT: a difference too small to resolve
HIGH = [float(v) for v in range(10, 20)]
LOW = [float(v) for v in range(10)]


def correct(accuracies, seeds=2):
    """``{(variant, scale, 0.0): [per seed]}`` from ``{(variant, scale): per-document list}``."""
    return {(variant, float(scale), 0.0): [documents] * seeds for (variant, scale), documents in accuracies.items()}


def tokens(positive, negative, neutral, vtw=1.0):
    """One seed's token analysis with the same values as polarity, attention and average weights."""
    groups = {"positive": positive, "negative": negative, "neutral": neutral}
    return {"classes": {name: {"count": len(values), "polarity": values, "attention": values}
                        for name, values in groups.items()},
            "average_weights": groups, "vtw": vtw}


def verdict(task, name, num_classes=2, accuracies=None, analyses=None, extra_correct=None):
    claims = judge(task, num_classes, {**correct(accuracies or {}), **(extra_correct or {})}, analyses or {})
    return claims[name]["verdict"]


@pytest.mark.parametrize("at_10,at_tiny,expected", [(RIGHT, HALF, "✓"), (HALF, RIGHT, "✗"), (RIGHT, ALMOST, "?")])
def test_a_tiny_scale_hurting_is_judged_by_a_bootstrap_over_documents(at_10, at_tiny, expected):
    name = "RT: scale 0.001 hurts DP (accuracy at scale 10 minus 0.001)"
    assert verdict("rotten_tomatoes", name, accuracies={("DP", 10): at_10, ("DP", 0.001): at_tiny}) == expected


def test_a_bootstrap_claim_states_its_interval_and_the_papers_numbers():
    claims = judge("newsgroups:hockey-vs-baseball", 2, correct({("DP", 10): RIGHT, ("DP", 1): HALF}), {})
    judged = claims["20News I: scale 1 hurts DP (accuracy at scale 10 minus 1)"]
    assert judged["difference"] == pytest.approx(0.5)
    assert judged["ci95"][0] < 0.5 < judged["ci95"][1]
    assert "88.4 % at λ = 1, 92.8 % at λ = 10" in judged["paper"]


@pytest.mark.parametrize("at_10,at_large,expected", [(RIGHT, ALMOST, "✓"), (RIGHT, HALF, "✗"), (HALF, RIGHT, "✓")])
def test_mean_pooling_does_not_hurt_is_contradicted_only_by_a_significant_loss(at_10, at_large, expected):
    name = "RT: mean pooling (scale 10⁴) does not hurt AD (accuracy at scale 10 minus 10⁴)"
    assert verdict("rotten_tomatoes", name, accuracies={("AD", 10): at_10, ("AD", 10000): at_large}) == expected


@pytest.mark.parametrize("free,penalised,expected", [(RIGHT, ALMOST, "✓"), (HALF, RIGHT, "✗")])
def test_the_vtw_penalty_claim_is_contradicted_by_a_significant_gain(free, penalised, expected):
    name = "RT: the VᵀW penalty brings no accuracy gain (DP at scale 10, penalised minus not)"
    assert verdict("rotten_tomatoes", name, accuracies={("DP", 10): free},
                   extra_correct={("DP", 10.0, 1.0): [penalised] * 2}) == expected


@pytest.mark.parametrize("dp_tiny,lstm_tiny,expected", [(HALF, RIGHT, "✓"), (RIGHT, HALF, "✗"), (HALF, HALF, "?")])
def test_the_lstm_shield_compares_the_two_losses_document_by_document(dp_tiny, lstm_tiny, expected):
    name = "RT: the LSTM shields DP-L from scale 0.001 (DP's accuracy loss minus DP-L's)"
    assert verdict("rotten_tomatoes", name, accuracies={("DP", 10): RIGHT, ("DP", 0.001): dp_tiny,
                                                        ("DP-L", 10): RIGHT, ("DP-L", 0.001): lstm_tiny}) == expected


@pytest.mark.parametrize("positive,neutral,expected", [(HIGH, LOW, "✓"), (LOW, HIGH, "✗"), (LOW, LOW, "?")])
@pytest.mark.parametrize("name", ["RT: DP, scale 10: positive tokens' attention scores above neutral",
                                  "RT: AD, scale 10: positive tokens' polarity scores above neutral",
                                  "RT: DP, scale 10: positive tokens' average attention weights above neutral",
                                  "RT: DP, scale 10, VᵀW penalty: positive tokens' attention scores above neutral"])
def test_token_class_claims_are_judged_by_a_rank_test_over_tokens(name, positive, neutral, expected):
    analysis = [tokens(positive, LOW, neutral)] * 3
    analyses = {("DP", 10.0, 0.0): analysis, ("AD", 10.0, 0.0): analysis, ("DP", 10.0, 1.0): analysis}
    assert verdict("rotten_tomatoes", name, analyses=analyses) == expected


@pytest.mark.parametrize("negative,neutral,expected", [(LOW, HIGH, "✓"), (HIGH, LOW, "✗")])
def test_negative_polarity_scores_are_claimed_below_the_neutral_ones(negative, neutral, expected):
    name = "RT: DP, scale 10: negative tokens' polarity scores below neutral"
    assert verdict("rotten_tomatoes", name, analyses={("DP", 10.0, 0.0): [tokens(HIGH, negative, neutral)]}) == expected


def test_every_seed_must_agree_on_a_token_class_claim():
    name = "RT: DP, scale 10: positive tokens' attention scores above neutral"
    assert verdict("rotten_tomatoes", name,
                   analyses={("DP", 10.0, 0.0): [tokens(HIGH, LOW, LOW), tokens(LOW, LOW, HIGH)]}) == "?"


@pytest.mark.parametrize("vtw,expected", [(1.0, "✓"), (-1.0, "✗")])
def test_term_d_favours_the_class_of_the_sign_of_vtw(vtw, expected):
    name = ("RT: DP, scale 100: the class favoured by the sign of VᵀW gets larger attention scores than the "
            "other (term D)")
    analyses = {("DP", 100.0, 0.0): [tokens(HIGH, LOW, LOW, vtw=vtw)] * 2}
    assert verdict("rotten_tomatoes", name, analyses=analyses) == expected
    assert verdict("rotten_tomatoes", name, analyses={("DP", 100.0, 0.0): [tokens(LOW, LOW, LOW, vtw)]}) == "?"


@pytest.mark.parametrize("labels,neutral,expected", [(HIGH, LOW, "✓"), (LOW, HIGH, "✗"), (LOW, LOW, "?")])
def test_three_labels_pool_every_labels_tokens_against_the_neutral_ones(labels, neutral, expected):
    name = "20News II: DP, scale 10: polarity tokens of every label get larger attention scores than neutral ones"
    classes = {"a": labels, "b": labels, "c": labels, "neutral": neutral}
    analysis = {"classes": {name: {"count": len(v), "polarity": v, "attention": v} for name, v in classes.items()}}
    assert verdict("newsgroups:motorcycles-med-guns", name, num_classes=3,
                   analyses={("DP", 10.0, 0.0): [analysis]}) == expected


def test_a_full_binary_run_is_judged_on_every_claim_and_a_three_label_one_on_its_own():
    variants = ("DP", "DP-L", "DP-A", "AD")
    every = correct({(variant, scale): RIGHT for variant in variants for scale in TABLE_2_SCALES})
    analysis = [tokens(HIGH, HIGH, LOW)]
    binary = judge("rotten_tomatoes", 2, {**every, ("DP", 10.0, 1.0): [RIGHT] * 2},
                   {model: analysis for model in [("DP", 10.0, 0.0), ("DP", 100.0, 0.0), ("DP", 10.0, 1.0),
                                                  ("AD", 10.0, 0.0)]})
    # Table 2: 4 tiny-scale + 1 scale-1 + 4 mean-pooling + the LSTM shield + the VᵀW penalty; tokens: 4 of DP
    # (Fig. 2) + 4 of AD (Fig. 4) + term D + 2 with the penalty + 2 average weights (Fig. 5)
    assert len(binary) == 11 + 13 and all(name.startswith("RT: ") for name in binary)
    three = judge("newsgroups:motorcycles-med-guns", 3, every, {("DP", 10.0, 0.0): [{"classes": {
        "a": {"attention": HIGH}, "neutral": {"attention": LOW}}}]})
    assert len(three) == 10 + 1
