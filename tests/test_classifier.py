"""Tests for sparse_tutorial.models.classifier: hand-computed Sun & Lu forward, masking, heads, configs."""
import math

import pytest
import torch

from sparse_tutorial.models.classifier import (
    AttentionClassifier,
    ClassifierConfig,
    classification_loss,
    meister_config,
    predicted_probability,
    predictions,
    sun_lu_config,
)


def set_dp_weights(model: AttentionClassifier, embeddings, v, w) -> None:
    with torch.no_grad():
        model.embedding.weight.copy_(torch.tensor(embeddings, dtype=torch.float))
        model.query.copy_(torch.tensor(v, dtype=torch.float))
        model.head.weight.copy_(torch.tensor([w], dtype=torch.float))


def test_dp_forward_matches_sun_lu_equations_1_to_4():
    model = AttentionClassifier(sun_lu_config("DP", vocab_size=4, scale=2.0, embed_dim=2))
    set_dp_weights(model, [[0, 0], [1, 0], [0, 1], [1, 1]], v=[2.0, 0.0], w=[1.0, -1.0])
    ids = torch.tensor([[1, 2, 3]])
    out = model(ids, torch.ones_like(ids, dtype=torch.bool))
    a = torch.tensor([1.0, 0.0, 1.0])               # a_j = e_jᵀV / λ
    alpha = a.softmax(0)
    s = (alpha * torch.tensor([1.0, -1.0, 0.0])).sum()   # Σ α_j s_j with s_j = e_jᵀW
    torch.testing.assert_close(out.weights[0], alpha)
    torch.testing.assert_close(out.logits[0], s)
    assert model.vtw().item() == pytest.approx(2.0)


@pytest.mark.parametrize("variant", ["DP", "DP-L", "DP-A", "AD"])
def test_sun_lu_variants_ignore_padding(variant):
    torch.manual_seed(0)
    model = AttentionClassifier(sun_lu_config(variant, vocab_size=20, embed_dim=8)).eval()
    ids = torch.tensor([[3, 4, 5, 0, 0]])
    mask = ids != 0
    out = model(ids, mask)
    out_other_pad = model(torch.tensor([[3, 4, 5, 7, 9]]), mask)
    out_short = model(ids[:, :3], mask[:, :3])
    assert torch.all(out.weights[0, 3:] == 0)
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(1))
    torch.testing.assert_close(out.logits, out_other_pad.logits)
    torch.testing.assert_close(out.logits, out_short.logits)


@pytest.mark.parametrize("encoder", ["bilstm", "transformer"])
@pytest.mark.parametrize("projection,kwargs", [("softmax", {}), ("sparsemax", {}), ("sparsegen", {"lam": 0.5})])
def test_meister_models_shapes_and_padding(encoder, projection, kwargs):
    torch.manual_seed(0)
    model = AttentionClassifier(meister_config(encoder, vocab_size=30, projection=projection, embed_dim=8,
                                               hidden_dim=8, **kwargs)).eval()
    ids = torch.randint(1, 30, (4, 6))
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 3:] = False
    out = model(ids, mask)
    assert out.logits.shape == (4,) and out.weights.shape == (4, 6)
    assert torch.all(out.weights[1, 3:] == 0)
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(4))
    torch.testing.assert_close(model(ids[1:2, :3], mask[1:2, :3]).logits, out.logits[1:2])


def test_sparsemax_attention_can_be_exactly_zero_on_real_tokens():
    model = AttentionClassifier(ClassifierConfig(vocab_size=4, embed_dim=2, scale=0.1, projection="sparsemax"))
    set_dp_weights(model, [[0, 0], [1, 0], [0, 1], [3, 0]], v=[1.0, 0.0], w=[1.0, 1.0])
    ids = torch.tensor([[1, 2, 3]])
    weights = model(ids, torch.ones_like(ids, dtype=torch.bool)).weights[0]
    assert weights.tolist() == [0.0, 0.0, 1.0]


def test_fixed_attention_weights_override_the_model():
    model = AttentionClassifier(sun_lu_config("DP", vocab_size=4, scale=1.0, embed_dim=2))
    set_dp_weights(model, [[0, 0], [1, 0], [0, 1], [1, 1]], v=[5.0, 0.0], w=[1.0, -1.0])
    ids = torch.tensor([[1, 2]])
    out = model(ids, torch.ones_like(ids, dtype=torch.bool), attention_weights=torch.tensor([[0.0, 1.0]]))
    assert out.logits.item() == pytest.approx(-1.0)   # all weight on token 2, whose s_e = -1


def test_multiclass_head_and_losses():
    model = AttentionClassifier(sun_lu_config("DP", vocab_size=10, num_classes=3, embed_dim=4))
    ids = torch.randint(1, 10, (5, 4))
    logits = model(ids, torch.ones_like(ids, dtype=torch.bool)).logits
    assert logits.shape == (5, 3)
    assert predictions(logits).shape == (5,)
    with pytest.raises(ValueError, match="vtw"):
        model.vtw()
    s, y = torch.tensor([2.0, -1.0]), torch.tensor([1, 1])
    expected = -torch.log(torch.sigmoid(torch.tensor([2.0, -1.0]))).mean()   # eq. 5 with y = +1
    torch.testing.assert_close(classification_loss(s, y), expected)
    torch.testing.assert_close(classification_loss(s.double(), y), expected.double())   # float64 logits too
    torch.testing.assert_close(predicted_probability(torch.tensor([0.0, math.log(3)])), torch.tensor([0.5, 0.75]))


def test_bad_config_is_named():
    with pytest.raises(ValueError, match="variant"):
        sun_lu_config("XX", vocab_size=3)
    with pytest.raises(ValueError, match="encoder"):
        AttentionClassifier(ClassifierConfig(vocab_size=3, encoder="gru"))
    with pytest.raises(ValueError, match="mask"):
        model = AttentionClassifier(ClassifierConfig(vocab_size=3, embed_dim=2))
        model(torch.ones(1, 3, dtype=torch.long), torch.ones(1, 2, dtype=torch.bool))
