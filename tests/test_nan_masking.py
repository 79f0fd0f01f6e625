"""Finding 14 of issue 19: whatever masked padding holds (even NaN) cannot reach an attention result or its
gradients, and greedy decoding never picks a token whose log-probability is NaN (beam search already did not)."""
import pytest
import torch

from sparse_tutorial.attention import (
    Attention,
    ContextAttention,
    LocalPAttention,
    MultiHeadAttention,
    PointerAttention,
    get_score,
)
from sparse_tutorial.decoding import beam_search, greedy_decode

BATCH, SRC, DIM = 2, 5, 4
MASK = torch.tensor([[True, True, True, False, False], [True, True, True, True, False]])


def nan_padded(*shape: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A random ``(BATCH, SRC, *shape)`` tensor and the same with NaN at every masked position."""
    clean = torch.randn(BATCH, SRC, *shape, generator=torch.Generator().manual_seed(0)).masked_fill(
        ~MASK.view(BATCH, SRC, *[1] * len(shape)), 0.0)
    return clean, clean.masked_fill(~MASK.view(BATCH, SRC, *[1] * len(shape)), float("nan"))


def check_same_and_finite_gradients(module: torch.nn.Module, forward) -> None:
    """``forward(keys)`` is equal with zero and NaN padding, and the gradients of the keys and of every
    parameter are finite."""
    clean, poisoned = nan_padded(DIM)
    expected = forward(clean)
    outputs = forward(poisoned.requires_grad_())
    for got, want in zip(outputs, expected):
        assert torch.equal(got, want)
    sum(o[torch.isfinite(o)].sum() for o in outputs).backward()
    assert torch.isfinite(poisoned.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in module.parameters() if p.grad is not None)


@pytest.mark.parametrize("score", ["dot", "general", "additive", "cosine"])
@pytest.mark.parametrize("projection", ["softmax", "sparsemax"])
def test_attention_ignores_nan_in_masked_keys_and_values(score, projection):
    kwargs = {} if score in ("dot", "cosine") else {"query_dim": DIM, "key_dim": DIM}
    if score == "additive":
        kwargs["hidden_dim"] = DIM
    torch.manual_seed(0)
    attention = Attention(get_score(score, **kwargs), projection)
    query = torch.randn(BATCH, DIM)
    check_same_and_finite_gradients(attention, lambda keys: attention(query, keys, keys, mask=MASK))


def test_multi_head_attention_ignores_nan_in_padded_keys_and_values():
    torch.manual_seed(0)
    attention = MultiHeadAttention(DIM, num_heads=2, batch_first=True)
    query = torch.randn(BATCH, 3, DIM)
    check_same_and_finite_gradients(attention, lambda keys: attention(query, keys, keys, key_padding_mask=~MASK))


def test_context_local_and_pointer_attention_ignore_nan_padding():
    torch.manual_seed(0)
    context = ContextAttention(DIM, DIM, "sparsemax")
    check_same_and_finite_gradients(context, lambda inputs: context(inputs, MASK))
    local = LocalPAttention("dot", DIM, DIM, half_window=2)
    query = torch.randn(BATCH, DIM)
    check_same_and_finite_gradients(local, lambda keys: local(query, keys, mask=MASK))
    pointer = PointerAttention(DIM, DIM, DIM)
    check_same_and_finite_gradients(pointer, lambda keys: pointer(query, keys, MASK))


def test_nan_at_a_kept_position_still_shows():
    values = torch.randn(BATCH, SRC, DIM)
    values[0, 1] = float("nan")
    context, _ = Attention("dot")(torch.randn(BATCH, DIM), torch.randn(BATCH, SRC, DIM), values, mask=MASK)
    assert torch.isnan(context[0]).all() and torch.isfinite(context[1]).all()


@pytest.mark.parametrize("search", [greedy_decode, beam_search])
def test_decoding_never_picks_a_nan_token(search):
    bos, eos = 0, 1
    # token 2 is NaN, token 3 is the best finite choice, then </s>
    first = torch.tensor([float("-inf"), -5.0, float("nan"), -0.5, -2.0])
    then_stop = torch.tensor([float("-inf"), -0.1, float("nan"), -4.0, -4.0])

    def step(tokens, position):
        rows = (then_stop if int(position[0]) else first).expand(len(tokens), -1)
        return rows, position + 1, None

    out = search(step, torch.zeros(1, dtype=torch.long), 1, bos, eos, max_len=4)
    assert out.tokens == [[3]]
    assert out.scores.item() == pytest.approx(-0.6)


@pytest.mark.parametrize("score", ["dot", "additive"])
def test_padding_is_zero_skips_the_copy_and_changes_nothing_when_the_padding_is_zero(score):
    kwargs = {"query_dim": DIM, "key_dim": DIM, "hidden_dim": DIM} if score == "additive" else {}
    torch.manual_seed(0)
    attention = Attention(get_score(score, **kwargs), "sparsemax")
    query = torch.randn(BATCH, DIM)
    clean, poisoned = nan_padded(DIM)
    results = []
    for padding_is_zero in (False, True):
        keys = clean.clone().requires_grad_()
        context, weights = attention(query, keys, mask=MASK, padding_is_zero=padding_is_zero)
        context.square().sum().backward()
        results.append((context, weights, keys.grad))
    for copied, used_as_is in zip(*results):
        assert torch.equal(copied, used_as_is)
    # The promise is not checked: NaN padding declared zero reaches the context.
    context, _ = attention(query, poisoned, mask=MASK, padding_is_zero=True)
    assert torch.isnan(context).any()


def test_the_decoders_that_declare_zero_padding_have_it():
    from sparse_tutorial.models.pointer_generator import PointerGenerator, PointerGeneratorConfig
    from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig

    torch.manual_seed(0)
    source = torch.tensor([[3, 4, 5, 6, 7], [3, 4, 0, 0, 0]])
    padding = ~(source != 0)
    for layers in (1, 2):
        seq2seq = Seq2Seq(Seq2SeqConfig(src_vocab=10, tgt_vocab=10, embed_dim=4, hidden_dim=6,
                                        encoder_layers=layers))
        assert seq2seq.init_state(source, source != 0).keys[padding].eq(0).all()
    pointer = PointerGenerator(PointerGeneratorConfig(vocab_size=10, embedding_dim=4, hidden_dim=5, attention_dim=3))
    encoded, _ = pointer.encode(source, source != 0, source)
    assert encoded.annotations[padding].eq(0).all()
