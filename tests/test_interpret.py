"""Tests for sparse_tutorial.interpret on hand-computable cases."""
import math

import numpy as np
import pytest
import torch
from scipy.stats import kendalltau

from sparse_tutorial.interpret import (
    NEGATIVE,
    NEUTRAL,
    POSITIVE,
    UNCLASSIFIED,
    adversarial_attention,
    batched_kendall_tau_b,
    class_probability,
    gamma,
    gradient_importance,
    intermediate_importance,
    jensen_shannon,
    kendall_tau_b,
    label_classes,
    leave_one_out_importance,
    normalized_entropy,
    token_classes,
    token_scores,
)
from sparse_tutorial.models.classifier import AttentionClassifier, meister_config, sun_lu_config


def small_model(variant="DP", seed=0, **kwargs):
    torch.manual_seed(seed)
    model = AttentionClassifier(sun_lu_config(variant, vocab_size=12, embed_dim=4, scale=1.0, **kwargs))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 1)     # large enough weights for non-trivial attention and gradients
    return model.double().eval()


def test_token_scores_are_e_dot_w_and_e_dot_v_over_lambda():
    model = AttentionClassifier(sun_lu_config("DP", vocab_size=3, scale=4.0, embed_dim=2))
    with torch.no_grad():
        model.embedding.weight.copy_(torch.tensor([[0.0, 0.0], [1.0, 2.0], [-3.0, 1.0]]))
        model.query.copy_(torch.tensor([2.0, 2.0]))
        model.head.weight.copy_(torch.tensor([[1.0, -1.0]]))
    scores = token_scores(model)
    torch.testing.assert_close(scores.polarity, torch.tensor([0.0, -1.0, -4.0]))
    torch.testing.assert_close(scores.attention, torch.tensor([0.0, 1.5, -1.0]))


def test_gamma_and_token_classes_follow_the_thresholds():
    pos = torch.tensor([10, 0, 6, 20, 3, 8, 0])
    neg = torch.tensor([0, 10, 6, 19, 0, 2, 0])
    torch.testing.assert_close(gamma(pos, neg)[:3], torch.tensor([1.0, -1.0, 0.0], dtype=torch.double))
    classes = token_classes(pos, neg).tolist()
    # pure positive, pure negative, even, even (|gap|=1), too rare, γ=0.6 with f⁺=8, never seen
    assert classes == [POSITIVE, NEGATIVE, NEUTRAL, NEUTRAL, UNCLASSIFIED, POSITIVE, UNCLASSIFIED]


def test_label_classes_multiclass_rule():
    counts = torch.tensor([[9, 1, 0], [4, 3, 3], [2, 2, 2], [1, 0, 0]])
    assert label_classes(counts).tolist() == [0, -1, -1, -2]


def numerical_importance(model, ids, mask, eps=1e-6):
    """Finite-difference ‖∂ŷ/∂X_i‖ per position, normalised (eq. 4)."""
    emb = model.embed(ids).detach()
    logits = model.forward_embedded(emb, mask).logits
    labels = (logits > 0).long()
    norms = torch.zeros(ids.shape, dtype=torch.double)
    for i in range(ids.shape[1]):
        grad = torch.zeros(ids.shape[0], emb.shape[-1], dtype=torch.double)
        for k in range(emb.shape[-1]):
            plus, minus = emb.clone(), emb.clone()
            plus[:, i, k] += eps
            minus[:, i, k] -= eps
            f = lambda e: class_probability(model.forward_embedded(e, mask).logits, labels)
            grad[:, k] = (f(plus) - f(minus)) / (2 * eps)
        norms[:, i] = grad.norm(dim=-1)
    norms = norms * mask
    return norms / norms.sum(-1, keepdim=True)


@pytest.mark.parametrize("variant", ["DP", "DP-L", "AD"])
def test_gradient_importance_matches_finite_differences(variant):
    model = small_model(variant)
    ids = torch.tensor([[1, 5, 7, 2], [3, 4, 0, 0]])
    mask = ids != 0
    analytic = gradient_importance(model, ids, mask)
    torch.testing.assert_close(analytic, numerical_importance(model, ids, mask), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(analytic.sum(-1), torch.ones(2, dtype=torch.double))
    assert torch.all(analytic[1, 2:] == 0)


def test_intermediate_importance_is_one_hot_without_encoder_and_causal_for_lstm():
    ids = torch.tensor([[1, 5, 7, 2], [3, 4, 6, 0]])
    mask = ids != 0
    no_encoder = intermediate_importance(small_model("DP"), ids, mask)
    torch.testing.assert_close(no_encoder[0], torch.eye(4, dtype=torch.double))   # h_p = x_p
    assert torch.all(no_encoder[1, 3] == 0)                                       # padded h_p
    lstm = intermediate_importance(small_model("DP-L"), ids, mask)
    assert torch.all(lstm[0].triu(1) == 0)             # a left-to-right LSTM's h_p ignores x_i for i > p
    assert torch.all(lstm[0][torch.ones(4, 4, dtype=torch.bool).tril()] > 0)
    torch.testing.assert_close(lstm[0].sum(-1), torch.ones(4, dtype=torch.double))


@pytest.mark.parametrize("encoder", ["bilstm", "transformer"])
def test_leave_one_out_matches_explicit_deletion(encoder):
    torch.manual_seed(1)
    model = AttentionClassifier(meister_config(encoder, vocab_size=15, embed_dim=6, hidden_dim=6)).double().eval()
    ids = torch.tensor([[1, 5, 7, 2, 9], [3, 4, 6, 0, 0]])
    mask = ids != 0
    batched = leave_one_out_importance(model, ids, mask, chunk_size=3)
    for b in range(2):
        n = int(mask[b].sum())
        row = ids[b, :n]
        logit = model(row[None], torch.ones(1, n, dtype=torch.bool)).logits
        label = (logit > 0).long()
        y = class_probability(logit, label)
        diffs = []
        for i in range(n):
            deleted = torch.cat([row[:i], row[i + 1:]])[None]
            diffs.append((y - class_probability(model(deleted, torch.ones_like(deleted, dtype=torch.bool)).logits,
                                                label)).abs().item())
        expected = torch.tensor(diffs, dtype=torch.double) / sum(diffs)
        torch.testing.assert_close(batched[b, :n], expected)
        assert torch.all(batched[b, n:] == 0)


def test_normalized_entropy_bounds():
    mask = torch.tensor([[True] * 4, [True] * 4, [True, True, False, False], [True, False, False, False]])
    p = torch.tensor([[0.25] * 4, [0, 1.0, 0, 0], [0.5, 0.5, 0, 0], [1.0, 0, 0, 0]])
    torch.testing.assert_close(normalized_entropy(p, mask), torch.tensor([1.0, 0.0, 1.0, 0.0]))
    random = torch.rand(50, 7).softmax(-1)
    h = normalized_entropy(random)
    assert torch.all((h >= 0) & (h <= 1 + 1e-6))


def test_kendall_tau_b_with_ties_matches_scipy_and_hand_value():
    assert kendall_tau_b([1, 2, 3], [1, 2, 2]) == pytest.approx(2 / math.sqrt(6))
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 3, 20), rng.integers(0, 4, 20)
    assert kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y, variant="b").statistic)
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    taus = batched_kendall_tau_b(torch.tensor([[1.0, 2, 3, 9], [1, 2, 3, 4]]),
                                 torch.tensor([[1.0, 2, 2, 0], [4, 3, 2, 1]]), mask)
    torch.testing.assert_close(taus, torch.tensor([2 / math.sqrt(6), -1.0]))


def test_jensen_shannon_limits():
    p = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    q = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    torch.testing.assert_close(jensen_shannon(p, q), torch.tensor([0.0, math.log(2)]))


def test_adversarial_attention_diverges_but_keeps_the_prediction():
    torch.manual_seed(0)
    model = AttentionClassifier(sun_lu_config("DP", vocab_size=12, embed_dim=4, scale=1.0))
    with torch.no_grad():
        model.embedding.weight.normal_(0, 1)
        model.head.weight.fill_(0.01)      # weak head: many distributions give almost the same output
        model.query.normal_(0, 3)
    ids = torch.tensor([[1, 5, 7, 2, 9, 10]])
    mask = torch.ones_like(ids, dtype=torch.bool)
    original = model(ids, mask)
    adversary = adversarial_attention(model, ids, mask, epsilon=0.01, steps=150)
    torch.testing.assert_close(adversary.sum(-1), torch.ones(1))
    changed = model(ids, mask, attention_weights=adversary).logits
    assert (torch.sigmoid(changed) - torch.sigmoid(original.logits)).abs().item() <= 0.011
    assert jensen_shannon(adversary, original.weights).item() > 0.2
    assert all(p.grad is None for p in model.parameters())
