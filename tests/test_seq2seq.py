"""Tests for sparse_tutorial.models.seq2seq: shapes, masking, teacher forcing vs stepping, projections,
coverage, the regularized loss, and that it learns a toy task."""
import pytest
import torch

from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig, make_batch, seq2seq_loss
from sparse_tutorial.training import TrainConfig, train

PAD, BOS, EOS = 0, 1, 2


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models run fastest on one thread (and the test machine is shared)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
PAIRS = [([3, 4, 5], [5, 4, 3]), ([6, 7], [7, 6]), ([3, 8, 9, 4], [4, 9, 8, 3]), ([5], [5])]


def model_for(**kwargs) -> Seq2Seq:
    torch.manual_seed(0)
    cfg = dict(src_vocab=10, tgt_vocab=10, embed_dim=8, hidden_dim=12, attention_dim=6, dropout=0.0) | kwargs
    return Seq2Seq(Seq2SeqConfig(**cfg)).eval()


def test_make_batch_layout():
    b = make_batch(PAIRS[:2], BOS, EOS)
    assert b.src.tolist() == [[3, 4, 5], [6, 7, 0]] and b.src_mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    assert b.tgt_in.tolist() == [[1, 5, 4, 3], [1, 7, 6, 0]]
    assert b.tgt_out.tolist() == [[5, 4, 3, 2], [7, 6, 2, 0]]
    assert b.tgt_mask.sum().item() == 7


@pytest.mark.parametrize("layers", [(1, 1), (2, 2), (3, 2)])
def test_shapes_and_attention_on_simplex(layers):
    model = model_for(encoder_layers=layers[0], decoder_layers=layers[1])
    b = make_batch(PAIRS, BOS, EOS)
    log_probs, attn = model(b.src, b.src_mask, b.tgt_in)
    assert log_probs.shape == (4, 5, 10) and attn.shape == (4, 5, 4)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(4, 5), atol=1e-5)
    assert torch.allclose(attn.sum(-1), torch.ones(4, 5), atol=1e-5)
    assert bool((attn[~b.src_mask.unsqueeze(1).expand_as(attn)] == 0).all())  # padding gets exactly 0


def test_padding_does_not_change_the_result():
    model = model_for()
    alone = make_batch(PAIRS[1:2], BOS, EOS)
    padded = make_batch([PAIRS[1], PAIRS[2]], BOS, EOS)
    lp1, a1 = model(alone.src, alone.src_mask, alone.tgt_in)
    lp2, a2 = model(padded.src, padded.src_mask, padded.tgt_in)
    assert torch.allclose(lp1[0], lp2[0, :3], atol=1e-5)
    assert torch.allclose(a1[0], a2[0, :3, :2], atol=1e-5)


def test_sparsemax_attention_has_exact_zeros_and_softmax_none():
    b = make_batch(PAIRS, BOS, EOS)
    sparse = model_for(projection="sparsemax")
    with torch.no_grad():
        sparse.attention.score.v.weight.mul_(100.0)  # spread the scores as training does
    _, attn = sparse(b.src, b.src_mask, b.tgt_in)
    real = b.src_mask.unsqueeze(1).expand_as(attn)
    assert bool((attn[real] == 0).any())
    _, dense = model_for()(b.src, b.src_mask, b.tgt_in)
    assert bool((dense[real] > 0).all())


def test_lower_temperature_sharpens():
    from sparse_tutorial.metrics import attention_entropy_per_token
    b = make_batch(PAIRS, BOS, EOS)
    ents = [attention_entropy_per_token(model_for(projection="temperature", projection_kwargs={"temperature": t})(
        b.src, b.src_mask, b.tgt_in)[1], b.tgt_mask) for t in (1.0, 0.5, 0.1)]
    assert ents[0] > ents[1] > ents[2]


def test_gumbel_noise_only_in_training():
    model = model_for(projection="gumbel", projection_kwargs={"temperature": 0.5})
    b = make_batch(PAIRS, BOS, EOS)
    a1, a2 = model(b.src, b.src_mask, b.tgt_in)[1], model(b.src, b.src_mask, b.tgt_in)[1]
    assert torch.equal(a1, a2)
    model.train()
    assert not torch.equal(model(b.src, b.src_mask, b.tgt_in)[1], a1)


@pytest.mark.parametrize("coverage", [None, "neural", "accumulated"])
def test_forward_equals_decoding_and_beam_runs(coverage):
    model = model_for(coverage=coverage)
    b = make_batch(PAIRS, BOS, EOS)
    out = model.translate(b.src, b.src_mask, BOS, EOS, max_len=6)
    for row, tokens in enumerate(out.tokens):
        tgt_in = torch.tensor([[BOS, *tokens]])
        lp, attn = model(b.src[row:row + 1, :int(b.src_mask[row].sum())],
                         b.src_mask[row:row + 1, :int(b.src_mask[row].sum())], tgt_in)
        assert lp[0].argmax(-1).tolist()[:len(tokens)] == tokens
        assert torch.allclose(attn[0, :out.attention[row].shape[0]], out.attention[row][:, :attn.shape[2]],
                              atol=1e-5)
    beam = model.translate(b.src, b.src_mask, BOS, EOS, max_len=6, beam_size=3)
    assert len(beam.tokens) == 4 and all(a.shape[1] == 4 for a in beam.attention)


@pytest.mark.parametrize("penalty", [None, "entropy", "linf"])
def test_loss_and_gradients(penalty):
    model = model_for(coverage="neural").train()
    b = make_batch(PAIRS, BOS, EOS)
    loss, stats = seq2seq_loss(model, b, penalty=penalty, lam=0.5, coverage_weight=1.0)
    loss.backward()
    assert stats["tokens"] == b.tgt_mask.sum().item()
    expected = stats["nll"] + 0.5 * stats["penalty"] + stats["coverage_loss"]
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    if penalty == "entropy":
        assert stats["penalty"] == pytest.approx(stats["entropy"], rel=1e-5)
    if penalty == "linf":
        assert -1.0 <= stats["penalty"] < 0
    assert all(p.grad is not None for n, p in model.named_parameters() if "eval_attention" not in n)


def test_bad_arguments():
    with pytest.raises(ValueError, match="coverage"):
        Seq2SeqConfig(src_vocab=5, tgt_vocab=5, coverage="magic")
    with pytest.raises(ValueError, match="penalty"):
        seq2seq_loss(model_for(), make_batch(PAIRS, BOS, EOS), penalty="l2")
    with pytest.raises(ValueError, match="src_mask"):
        model_for().encode(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3))


def test_learns_to_reverse_and_entropy_penalty_sharpens():
    batches = [make_batch(PAIRS, BOS, EOS)]
    results = {}
    for penalty in (None, "entropy"):
        model = model_for(hidden_dim=24, embed_dim=16)
        history = train(model, batches, lambda m, b: seq2seq_loss(m, b, penalty=penalty, lam=1.0),
                        TrainConfig(epochs=120, lr=0.015, device="cpu"))
        results[penalty] = history.epochs[-1]
        assert history.epochs[-1]["nll"] < 0.1 * history.epochs[0]["nll"]
    out = model.translate(batches[0].src, batches[0].src_mask, BOS, EOS)
    assert out.tokens == [t for _, t in PAIRS]
    assert results["entropy"]["entropy"] < results[None]["entropy"]
