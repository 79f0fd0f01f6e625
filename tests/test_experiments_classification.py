"""Tests for the Part III experiment helpers (sparse_tutorial.experiments.classification / explanation)."""
import torch

from sparse_tutorial.experiments.classification import Split, fit, fit_sun_lu, synthetic_task, uniform_attention
from sparse_tutorial.experiments.explanation import erasure, frozen_attention, permutation
from sparse_tutorial.interpret import NEGATIVE, NEUTRAL, POSITIVE
from sparse_tutorial.models.classifier import AttentionClassifier, meister_config, sun_lu_config


def test_synthetic_task_satisfies_sun_and_lu_assumptions():
    task = synthetic_task(num_polar=3, num_neutral=4, length=6, polar_per_doc=2, train_pairs=50, seed=1)
    counts = task.token_counts                                   # (vocab, 2): [negative, positive]
    positive, negative, neutral = slice(1, 4), slice(4, 7), slice(7, 11)
    assert torch.all(counts[positive, 0] == 0) and torch.all(counts[negative, 1] == 0)
    assert torch.equal(counts[positive, 1], counts[negative, 0])         # mirror images
    assert torch.equal(counts[neutral, 0], counts[neutral, 1])           # neutral evenly in both classes
    assert task.train.labels.float().mean().item() == 0.5                 # balanced
    classes = task.token_classes()
    assert torch.all(classes[positive] == POSITIVE) and torch.all(classes[negative] == NEGATIVE)
    assert torch.all(classes[neutral] == NEUTRAL)


def test_subset_recounts_and_keeps_the_other_splits():
    task = synthetic_task(train_pairs=40)
    small = task.subset(10, seed=3)
    assert len(small.train.labels) == 10 and small.test is task.test
    assert small.token_counts.sum() == small.train.mask.sum()


def test_uniform_attention_spreads_over_real_tokens():
    mask = torch.tensor([[True, True, False, False], [True, True, True, True]])
    torch.testing.assert_close(uniform_attention(None, mask),
                               torch.tensor([[0.5, 0.5, 0, 0], [0.25, 0.25, 0.25, 0.25]]))


def tiny_split():
    ids = torch.tensor([[1, 5, 7, 2, 9], [3, 4, 6, 0, 0], [8, 2, 0, 0, 0]])
    return Split(ids, ids != 0, torch.tensor([1, 0, 1]))


def test_erasure_rates_are_bounded_by_any_deletion():
    torch.manual_seed(0)
    model = AttentionClassifier(meister_config("bilstm", vocab_size=12, embed_dim=6, hidden_dim=6)).eval()
    rates = erasure(model, tiny_split())
    assert all(0.0 <= rate <= rates["any"] <= 1.0 for name, rate in rates.items() if name != "any")


def test_permutation_cannot_change_a_model_whose_states_are_identical():
    torch.manual_seed(0)
    model = AttentionClassifier(sun_lu_config("DP", vocab_size=12, embed_dim=6)).eval()   # h_j = embedding
    ids = torch.tensor([[3, 3, 3, 3], [5, 5, 5, 0]])             # one token repeated: all h_j equal
    split = Split(ids, ids != 0, torch.tensor([0, 1]))
    result = permutation(model, split, permutations=5)
    assert result["flip_share"] == 0.0 and result["median_output_change"] < 1e-6


def test_fit_returns_a_cpu_model_and_device_cpu_is_the_default():
    task = synthetic_task(num_polar=3, num_neutral=4, length=6, train_pairs=30, test_pairs=20)
    config = sun_lu_config("DP", task.vocab_size, embed_dim=6, scale=10.0)
    default = fit(config, task, epochs=1, seed=0)
    explicit = fit(config, task, epochs=1, seed=0, device=torch.device("cpu"))
    assert next(default.model.parameters()).device.type == "cpu"
    assert default.test_accuracy == explicit.test_accuracy
    for mine, theirs in zip(default.model.parameters(), explicit.model.parameters()):
        torch.testing.assert_close(mine, theirs)


def test_frozen_attention_hands_back_weights_on_the_device_of_the_ids():
    torch.manual_seed(0)
    base = AttentionClassifier(meister_config("bilstm", vocab_size=12, embed_dim=6, hidden_dim=6)).eval()
    split = tiny_split()
    weights = frozen_attention(base)(split.token_ids, split.mask)
    assert weights.device == split.token_ids.device and weights.shape == split.token_ids.shape
    torch.testing.assert_close(weights.sum(-1), torch.ones(3))


def test_medium_and_full_profiles_cover_every_scale_of_table_2():
    from sparse_tutorial.experiments.classification import SIZES
    table_2 = (0.001, 1, 10, 20, 50, 100, 10000)
    assert SIZES["medium"].scales == table_2 and SIZES["full"].scales == table_2


def test_training_device_is_the_cpu_below_the_full_profile():
    from sparse_tutorial.profiles import default_device, training_device
    assert training_device("quick") == training_device("medium") == torch.device("cpu")
    assert training_device("full") == default_device()


def test_fit_sun_lu_trains_with_a_regularizer_of_the_readers_own():
    """Issue 21: ``fit_sun_lu(..., extra_loss=...)`` adds the reader's term to the loss of every step."""
    task = synthetic_task(num_polar=3, num_neutral=4, length=6, train_pairs=30, test_pairs=20)
    calls = []

    def large_attention_scores(model, token_ids, mask, output):
        calls.append(token_ids.shape)
        return -10.0 * model.vtw()  # rewards a large VᵀW

    plain = fit_sun_lu(task, "DP", 10.0, seed=0, epochs=1, embed_dim=6)
    rewarded = fit_sun_lu(task, "DP", 10.0, seed=0, epochs=1, embed_dim=6, extra_loss=large_attention_scores)
    assert len(calls) == 2  # 60 training documents, batches of 32: called once per step
    assert rewarded.model.vtw().item() > plain.model.vtw().item() + 0.1  # 0.18 against 0.01


def test_fit_shuffles_epoch_e_with_the_one_per_epoch_rule():
    """Issue 17: epoch ``e`` of a fit seeded ``s`` draws its batches with ``epoch_generator(s, e)``, whatever
    the epochs before it drew (every experiment shuffles alike)."""
    from sparse_tutorial.experiments.classification import batches
    from sparse_tutorial.training import epoch_generator

    task = synthetic_task(num_polar=3, num_neutral=4, length=6, train_pairs=30, test_pairs=20)
    seen = []

    def record(model, token_ids, mask, output):
        seen.append(token_ids)
        return torch.zeros(())

    fit_sun_lu(task, "DP", 10.0, seed=3, epochs=2, embed_dim=6, extra_loss=record)
    expected = [ids for epoch in (0, 1) for ids, _, _ in batches(task.train, 32, epoch_generator(3, epoch))]
    assert len(seen) == len(expected) == 4
    assert all(torch.equal(mine, theirs) for mine, theirs in zip(seen, expected))
