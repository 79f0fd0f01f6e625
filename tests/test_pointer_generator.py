"""Tests of sparse_tutorial.models.pointer_generator: the copy mixture on hand-computed cases, the extended
vocabulary, masking, coverage and the teacher-forced pass against step-by-step decoding."""
import pytest
import torch

from sparse_tutorial.decoding import greedy_decode
from sparse_tutorial.models.pointer_generator import (
    PointerGenerator,
    PointerGeneratorConfig,
    block_repeated_ngrams,
    extend_source,
    extend_target,
    mix_copy_distribution,
    pointer_generator_loss,
)

VOCAB = {"<pad>": 0, "<unk>": 1, "<s>": 2, "</s>": 3, "the": 4, "cat": 5, "sat": 6}


def small_model(**overrides) -> PointerGenerator:
    torch.manual_seed(0)
    config = dict(vocab_size=len(VOCAB), embedding_dim=6, hidden_dim=5, attention_dim=7)
    config.update(overrides)
    return PointerGenerator(PointerGeneratorConfig(**config)).eval()


def batch():
    """Two sources; the second is padded. OOVs: 'zork' (id 7 in row 0), 'quux' (id 7 in row 1)."""
    rows = [["the", "zork", "sat", "zork"], ["quux", "cat"]]
    encoded = [extend_source(row, VOCAB, VOCAB["<unk>"]) for row in rows]
    src_len = max(len(r) for r in rows)
    source = torch.zeros(2, src_len, dtype=torch.long)
    source_extended = torch.zeros(2, src_len, dtype=torch.long)
    for b, (ids, extended, _) in enumerate(encoded):
        source[b, : len(ids)] = torch.tensor(ids)
        source_extended[b, : len(ids)] = torch.tensor(extended)
    mask = source != VOCAB["<pad>"]
    target_input = torch.tensor([[2, 4, 7], [2, 7, 5]])
    return source, mask, source_extended, target_input


def test_mixture_hand_computed():
    vocab_probs = torch.tensor([[0.5, 0.3, 0.2]])
    attention = torch.tensor([[0.6, 0.4, 0.0]])  # the last position is padding
    source_extended = torch.tensor([[3, 1, 0]])  # id 3 is an OOV of this source
    mixed = mix_copy_distribution(vocab_probs, attention, torch.tensor([0.25]), source_extended, n_extended=4)
    # generation: 0.25 · [0.5, 0.3, 0.2, 0]; copy: 0.75 · 0.6 on id 3 and 0.75 · 0.4 on id 1
    torch.testing.assert_close(mixed, torch.tensor([[0.125, 0.375, 0.05, 0.45]]))
    assert mixed.sum().item() == pytest.approx(1.0)


def test_repeated_source_tokens_accumulate():
    mixed = mix_copy_distribution(torch.tensor([[0.2, 0.3, 0.5]]), torch.tensor([[0.5, 0.3, 0.2]]),
                                  torch.tensor([0.0]), torch.tensor([[2, 2, 1]]), n_extended=3)
    torch.testing.assert_close(mixed, torch.tensor([[0.0, 0.2, 0.8]]))


def test_mixture_rejects_small_extended_vocabulary():
    with pytest.raises(ValueError, match="n_extended"):
        mix_copy_distribution(torch.full((1, 3), 1 / 3), torch.ones(1, 1), torch.ones(1), torch.zeros(1, 1,
                              dtype=torch.long), n_extended=2)


def test_extend_source_and_target():
    ids, extended, oovs = extend_source(["the", "zork", "cat", "zork", "blip"], VOCAB, unk_id=1)
    assert ids == [4, 1, 5, 1, 1]
    assert extended == [4, 7, 5, 7, 8]
    assert oovs == ["zork", "blip"]
    # an OOV the source has is copyable (extended id); one it lacks is <unk>
    assert extend_target(["blip", "cat", "nope"], VOCAB, 1, oovs) == [8, 5, 1]


@pytest.mark.parametrize("coverage", [False, True])
def test_final_distribution_sums_to_one_over_extended_vocabulary(coverage):
    model = small_model(coverage=coverage)
    source, mask, source_extended, target_input = batch()
    output = model(source, mask, target_input, source_extended)
    assert output.log_probs.shape == (2, 3, len(VOCAB) + 1)
    torch.testing.assert_close(output.log_probs.exp().sum(-1), torch.ones(2, 3))
    assert ((output.p_gen > 0) & (output.p_gen < 1)).all()


@pytest.mark.parametrize("projection", ["sparsemax", "entmax15"])
def test_a_sparse_projection_copies_nothing_from_the_words_it_ignores(projection):
    model = small_model(projection=projection)
    source, mask, source_extended, target_input = batch()
    model.attention.score.v.weight.data.mul_(50)   # spread the scores so that the projection leaves zeros
    output = model(source, mask, target_input, source_extended)
    zeros = (output.attention == 0) & mask[:, None]
    assert zeros.any() and torch.isfinite(output.log_probs).all()
    torch.testing.assert_close(output.log_probs.exp().sum(-1), torch.ones(2, 3))
    # an OOV (extended id 7) whose every occurrence gets zero attention cannot be produced at that step
    copy_mass = torch.zeros(2, 3, 8).scatter_add(-1, source_extended[:, None].expand(-1, 3, -1), output.attention)
    ignored = copy_mass[..., 7] == 0
    assert (output.log_probs[..., 7].exp()[ignored] <= 1e-12).all()
    assert (output.log_probs[..., 7].exp()[~ignored] > 1e-6).all()


def test_attention_only_baseline_has_fixed_vocabulary_and_no_switch():
    model = small_model(pointer=False)
    source, mask, _, target_input = batch()
    output = model(source, mask, target_input)
    assert output.log_probs.shape == (2, 3, len(VOCAB))
    torch.testing.assert_close(output.log_probs.exp().sum(-1), torch.ones(2, 3))
    assert (output.p_gen == 1).all()
    assert model.generation_switch is None


def test_oov_copying_puts_mass_on_extended_id():
    model = small_model()
    with torch.no_grad():  # force p_gen = sigmoid(-50) ≈ 0: the output is the copy distribution
        model.generation_switch.weight.zero_()
        model.generation_switch.bias.fill_(-50.0)
    source, mask, source_extended, target_input = batch()
    output = model(source, mask, target_input, source_extended)
    probs = output.log_probs.exp()
    # row 0: "zork" (id 7) sits at positions 1 and 3, so it gets a_1 + a_3
    torch.testing.assert_close(probs[0, :, 7], output.attention[0, :, 1] + output.attention[0, :, 3])
    torch.testing.assert_close(probs[1, :, 7], output.attention[1, :, 0])
    assert (probs[0, :, 7] > 0.1).all()
    # words absent from the source get nothing
    assert probs[0, :, VOCAB["cat"]].max() < 1e-9


def test_padding_gets_no_attention_and_does_not_change_the_output():
    model = small_model(coverage=True)
    source, mask, source_extended, target_input = batch()
    output = model(source, mask, target_input, source_extended)
    assert (output.attention[1, :, 2:] == 0).all()
    other = source.clone()
    other[1, 2:] = VOCAB["cat"]  # different ids under the mask
    other_output = model(other, mask, target_input, source_extended)
    torch.testing.assert_close(other_output.log_probs[1], output.log_probs[1])


def test_coverage_accumulates_attention():
    model = small_model(coverage=True)
    source, mask, source_extended, target_input = batch()
    output = model(source, mask, target_input, source_extended)
    assert (output.coverage[:, 0] == 0).all()
    torch.testing.assert_close(output.coverage[:, 1:], output.attention.cumsum(dim=1)[:, :-1])


def test_coverage_feature_changes_attention():
    model = small_model(coverage=True)
    source, mask, source_extended, target_input = batch()
    before = model(source, mask, target_input, source_extended).attention
    with torch.no_grad():
        model.attention.score.coverage_proj.weight.mul_(50.0)
    after = model(source, mask, target_input, source_extended).attention
    torch.testing.assert_close(after[:, 0], before[:, 0])  # coverage is zero at the first step
    assert not torch.allclose(after[:, 1:], before[:, 1:])


def test_forward_equals_stepwise_decoding():
    model = small_model(coverage=True)
    source, mask, source_extended, target_input = batch()
    output = model(source, mask, target_input, source_extended)
    encoded, state = model.encode(source, mask, source_extended)
    for t in range(target_input.shape[1]):
        step = model.step(target_input[:, t], state, encoded)
        torch.testing.assert_close(step.log_probs, output.log_probs[:, t])
        state = step.state


def test_extended_ids_are_fed_back_as_unk():
    model = small_model()
    source, mask, source_extended, _ = batch()
    encoded, state = model.encode(source, mask, source_extended)
    copied = model.step(torch.tensor([7, 8]), state, encoded).log_probs
    unk = model.step(torch.full((2,), VOCAB["<unk>"]), state, encoded).log_probs
    torch.testing.assert_close(copied, unk)


def test_gradients_reach_every_parameter():
    model = small_model(coverage=True).train()
    source, mask, source_extended, target_input = batch()
    output = model(source, mask, target_input, source_extended)
    output.log_probs[:, :, [VOCAB["cat"], 7]].sum().backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


def test_bad_inputs_are_named():
    model = small_model()
    source, mask, source_extended, target_input = batch()
    with pytest.raises(TypeError, match="source_mask"):
        model(source, mask.long(), target_input)
    with pytest.raises(ValueError, match="n_extended"):
        model(source, mask, target_input, source_extended, n_extended=len(VOCAB))
    with pytest.raises(ValueError, match="empty row"):
        model(source, torch.zeros_like(mask), target_input)


def test_output_ids_map_copied_words_to_unk_only_without_pointer():
    target = torch.tensor([[4, 7, 3]])
    assert small_model().output_ids(target).tolist() == [[4, 7, 3]]
    assert small_model(pointer=False).output_ids(target).tolist() == [[4, 1, 3]]


def test_loss_composes_nll_coverage_and_entropy_per_target_token():
    model = small_model(coverage=True)
    source, mask, source_extended, target_input = batch()
    output = model(source, mask, target_input, source_extended)
    target = torch.tensor([[4, 7, 3], [7, 5, 0]])
    target_mask = torch.tensor([[True, True, True], [True, True, False]])
    loss, stats = pointer_generator_loss(output, target, target_mask, coverage_weight=0.5, entropy_weight=0.1)
    real = target_mask.flatten()
    nll = -output.log_probs.gather(-1, target.unsqueeze(-1)).flatten()[real].mean()
    attention = output.attention.flatten(0, 1)[real]
    coverage = output.coverage.flatten(0, 1)[real]
    covloss = torch.minimum(attention, coverage).sum(-1).mean()
    entropy = -(attention * attention.clamp_min(1e-30).log()).sum(-1).mean()
    torch.testing.assert_close(loss, nll + 0.5 * covloss + 0.1 * entropy)
    assert stats["nll"] == pytest.approx(nll.item(), rel=1e-5)
    assert stats["coverage_loss"] == pytest.approx(covloss.item(), rel=1e-5)
    assert stats["entropy"] == pytest.approx(entropy.item(), rel=1e-5)
    plain, _ = pointer_generator_loss(output, target, target_mask)
    torch.testing.assert_close(plain, nll)


def test_loss_rejects_ids_the_model_cannot_predict():
    model = small_model(pointer=False)
    source, mask, _, target_input = batch()
    output = model(source, mask, target_input)
    with pytest.raises(ValueError, match="output_ids"):
        pointer_generator_loss(output, torch.full((2, 3), 7), torch.ones(2, 3, dtype=torch.bool))


def test_block_repeated_ngrams_removes_repeated_trigrams():
    preference = torch.log_softmax(torch.tensor([-9.0, -9.0, -9.0, -9.0, 0.0, -1.0, -2.0, -3.0]), dim=0)

    def step(tokens, state):  # always prefers token 4, then 5, 6, 7; </s> (3) is never likely
        return preference.expand(tokens.shape[0], -1), state, None

    plain = greedy_decode(step, torch.zeros(2, 1), batch_size=2, bos=2, eos=3, max_len=8)
    assert plain.tokens[0] == [4] * 8
    blocked = greedy_decode(block_repeated_ngrams(step, n=3), (torch.zeros(2, 1), torch.zeros(2, 0,
                            dtype=torch.long)), batch_size=2, bos=2, eos=3, max_len=8)
    # after "4 4" the trigrams "4 4 4" (and later "4 4 5") exist, so the next choice falls to 5, then 6
    assert blocked.tokens[0] == [4, 4, 4, 5, 4, 4, 6, 4]
    trigrams = [tuple(blocked.tokens[0][i:i + 3]) for i in range(6)]
    assert len(set(trigrams)) == len(trigrams)


@pytest.mark.parametrize("block", [False, True])
def test_generate_decodes_in_the_extended_vocabulary(block):
    model = small_model()
    with torch.no_grad():  # copy only, so the OOVs must show up as extended ids
        model.generation_switch.weight.zero_()
        model.generation_switch.bias.fill_(-50.0)
    source, mask, source_extended, _ = batch()
    decoded = model.generate(source, mask, bos_id=2, eos_id=3, max_len=6, source_extended=source_extended,
                             block_repeated_trigrams=block)
    assert len(decoded.tokens) == 2
    for row, tokens in enumerate(decoded.tokens):
        assert set(tokens) <= set(source_extended[row][mask[row]].tolist())
        if block:
            trigrams = [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]
            assert len(set(trigrams)) == len(trigrams)
    assert 7 in decoded.tokens[0] + decoded.tokens[1]
