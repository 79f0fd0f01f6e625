"""Tests of sparse_tutorial.losses: the sparsemax loss, its gradient, targets, and the Huber connection."""
from __future__ import annotations

import entmax
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sparse_tutorial.losses import binary_sparsemax_loss, modified_huber_loss, multilabel_target, sparsemax_loss
from sparse_tutorial.projections import sparsemax


def _scores(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed)) * 2


def test_matches_the_paper_formula():
    # L = −q·z + ½ Σ_{j∈S} (z_j² − τ²) + ½‖q‖² (Martins & Astudillo 2016, eq. 17)
    scores = _scores(7, 6)
    target = torch.tensor([0, 1, 2, 3, 4, 5, 0])
    q = torch.nn.functional.one_hot(target, 6).double()
    p = sparsemax(scores)
    support = p > 0
    tau = ((scores * support).sum(1) - 1) / support.sum(1)
    expected = -(q * scores).sum(1) + 0.5 * ((scores ** 2 - tau[:, None] ** 2) * support).sum(1) + 0.5
    torch.testing.assert_close(sparsemax_loss(scores, target), expected)


def test_equals_entmax_package_loss():
    scores = _scores(20, 9, seed=1)
    target = torch.randint(0, 9, (20,), generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(sparsemax_loss(scores, target), entmax.sparsemax_loss(scores, target))


def test_nonnegative_and_zero_iff_sparsemax_equals_target():
    scores = _scores(50, 5, seed=3, dtype=torch.float32)
    target = torch.randint(0, 5, (50,), generator=torch.Generator().manual_seed(4))
    loss = sparsemax_loss(scores, target)
    assert loss.shape == (50,) and (loss >= 0).all()
    exact = sparsemax(scores)
    torch.testing.assert_close(sparsemax_loss(scores, exact), torch.zeros(50), atol=1e-6, rtol=0)
    is_one_hot_match = (exact == torch.nn.functional.one_hot(target, 5)).all(1)
    assert ((loss == 0) == is_one_hot_match).all()
    assert is_one_hot_match.any() and not is_one_hot_match.all()


def test_gradient_is_sparsemax_minus_target():
    scores = _scores(6, 4, seed=5).requires_grad_(True)
    target = torch.tensor([0, 1, 2, 3, 3, 0])
    sparsemax_loss(scores, target).sum().backward()
    expected = sparsemax(scores.detach()) - torch.nn.functional.one_hot(target, 4)
    torch.testing.assert_close(scores.grad, expected)


def test_gradcheck_float64():
    scores = (torch.randperm(20, generator=torch.Generator().manual_seed(6)).double() * 0.31).view(4, 5)
    scores.requires_grad_(True)
    target = torch.softmax(_scores(4, 5, seed=7), 1).requires_grad_(True)
    assert torch.autograd.gradcheck(sparsemax_loss, (scores, target))
    assert torch.autograd.gradcheck(lambda s: sparsemax_loss(s, torch.tensor([0, 4, 2, 1])), (scores,))


def test_multilabel_target_is_uniform_over_gold_labels():
    labels = torch.tensor([[True, False, True, False], [False, False, False, True]])
    expected = torch.tensor([[0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 1.0]])
    assert torch.equal(multilabel_target(labels), expected)
    scores = _scores(2, 4, seed=8)
    assert torch.equal(sparsemax_loss(scores, labels), sparsemax_loss(scores, expected.double()))
    # scores whose sparsemax is exactly uniform on the gold labels have zero loss
    assert torch.equal(sparsemax_loss(torch.tensor([[3.0, -3.0, 3.0, -3.0]]), labels[:1]), torch.zeros(1))
    with pytest.raises(ValueError, match="labels"):
        multilabel_target(torch.tensor([[False, False]]))


def test_huge_scores_stay_finite():
    scores = torch.tensor([[1e30, 0.0, -1e30], [3e38, -3e38, 0.0]])
    loss = sparsemax_loss(scores, torch.tensor([0, 2]))
    assert torch.isfinite(loss).all()
    assert loss[0] == 0 and loss[1] == 3e38


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype):
    scores = _scores(4, 3, seed=9, dtype=torch.float32).to(dtype)
    target = torch.tensor([0, 1, 2, 0])
    loss = sparsemax_loss(scores, target)
    assert loss.dtype == dtype
    assert torch.equal(loss, sparsemax_loss(scores.float(), target).to(dtype))


def test_errors_name_the_argument():
    scores = _scores(3, 4, seed=10)
    with pytest.raises(ValueError, match="scores"):
        sparsemax_loss(scores[0], torch.tensor(0))
    with pytest.raises(ValueError, match="target"):
        sparsemax_loss(scores, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="target"):
        sparsemax_loss(scores, torch.tensor([0, 1, 4]))
    with pytest.raises(ValueError, match="target"):
        sparsemax_loss(scores, torch.full((3, 4), 0.5, dtype=torch.float64))
    with pytest.raises(ValueError, match="target"):
        sparsemax_loss(scores, torch.ones(3, 5, dtype=torch.float64) / 5)
    with pytest.raises(ValueError, match="NaN"):
        sparsemax_loss(torch.full((1, 2), float("nan")), torch.tensor([0]))
    with pytest.raises(ValueError, match="finite"):
        sparsemax_loss(torch.tensor([[0.0, -float("inf")]]), torch.tensor([0]))


def test_binary_case_is_a_quarter_of_the_modified_huber_loss():
    margin = torch.linspace(-3, 3, 601, dtype=torch.float64)
    two_class_scores = torch.stack([margin, torch.zeros_like(margin)], 1)
    loss = sparsemax_loss(two_class_scores, torch.zeros(601, dtype=torch.long))
    torch.testing.assert_close(loss, binary_sparsemax_loss(margin))
    torch.testing.assert_close(4 * binary_sparsemax_loss(margin), modified_huber_loss(margin))
    assert binary_sparsemax_loss(torch.tensor(1.0)) == 0 and binary_sparsemax_loss(torch.tensor(-2.0)) == 2


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-30, 30, allow_nan=False, width=64), min_size=2, max_size=10), st.data())
def test_property_nonnegative_and_convex_lower_bound(values, data):
    scores = torch.tensor([values], dtype=torch.float64)
    gold = data.draw(st.integers(0, len(values) - 1))
    target = torch.tensor([gold])
    loss = sparsemax_loss(scores, target)
    assert loss.item() >= 0
    # convexity: L(z') ≥ L(z) + <∇L(z), z' − z>
    other = scores + 1.0
    other[0, gold] -= 2.0
    gradient = sparsemax(scores) - torch.nn.functional.one_hot(target, len(values))
    assert sparsemax_loss(other, target) >= loss + (gradient * (other - scores)).sum() - 1e-9


def test_sparsemax_loss_with_no_classes_names_scores():
    with pytest.raises(ValueError, match="scores has an empty dimension"):
        sparsemax_loss(torch.zeros(2, 0), torch.zeros(2, 0))
