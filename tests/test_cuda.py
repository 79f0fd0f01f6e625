"""Issue 33: the library on a GPU. Each test runs the same computation on the CPU and on CUDA and compares:
the projections and their gradients (with masked positions and an all-masked row), the attention, every
model's forward pass, one mixed-precision training step per model, and beam search.

They run whenever a GPU is present (``tools/gpu_check.py`` runs them first); without one they are skipped.
``SPARSE_TUTORIAL_GPU_TESTS_ON_CPU=1`` runs them with the CPU standing in for the GPU, to check the checks.
"""
import os

import pytest
import torch

from sparse_tutorial.projections.alpha_entmax import alpha_entmax
from sparse_tutorial.attention import Attention
from sparse_tutorial.projections.fused import eager
from sparse_tutorial.models.classifier import AttentionClassifier, meister_config, sun_lu_config
from sparse_tutorial.models.pointer_generator import PointerGenerator, PointerGeneratorConfig
from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig, make_batch, seq2seq_loss
from sparse_tutorial.projections import entmax15, softmax, sparsegen_lin, sparsemax
from sparse_tutorial.training import TrainConfig, train

STAND_IN = os.environ.get("SPARSE_TUTORIAL_GPU_TESTS_ON_CPU") == "1"
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available() and not STAND_IN, reason="needs a GPU")

PROJECTIONS = {"softmax": softmax, "sparsemax": sparsemax, "entmax15": entmax15,
               "sparsegen_lin": lambda x, dim=-1: sparsegen_lin(x, lam=0.5, dim=dim),
               "alpha_entmax": lambda x, dim=-1: alpha_entmax(x, alpha=1.3, dim=dim)}


def masked_scores(rows: int = 6, length: int = 17, seed: int = 0) -> torch.Tensor:
    """Random scores with a masked tail in every row but the first, and one all-masked row."""
    scores = torch.randn(rows, length, generator=torch.Generator().manual_seed(seed))
    for row in range(1, rows):
        scores[row, length - row:] = float("-inf")
    scores[-1] = float("-inf")
    return scores


@pytest.mark.skipif(STAND_IN, reason="host-device syncs exist on CUDA only")
def test_projections_and_multi_head_attention_never_wait_for_the_gpu():
    """Forward and backward of every projection and of MultiHeadAttention under sync debug mode "error": a
    value check or a data-dependent branch would wait for the device, and raise here."""
    from sparse_tutorial import MultiHeadAttention

    scores = masked_scores().to(DEVICE).requires_grad_(True)
    attention = MultiHeadAttention(16, 4, batch_first=True, projection="entmax15", device=DEVICE)
    inputs = torch.randn(2, 5, 16, device=DEVICE, requires_grad=True)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]], device=DEVICE)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for projection in PROJECTIONS.values():
            projection(scores, dim=-1).square().sum().backward()
        output, _ = attention(inputs, inputs, inputs, key_padding_mask=padding)
        output.square().sum().backward()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.isfinite(scores.grad).all() and torch.isfinite(inputs.grad).all()


@pytest.mark.parametrize("name", PROJECTIONS)
def test_projections_and_their_gradients_match_the_cpu(name):
    project = PROJECTIONS[name]
    cpu = masked_scores().requires_grad_()
    gpu = cpu.detach().to(DEVICE).requires_grad_()
    with eager():  # the CPU reference is the eager code the GPU runs too
        expected = project(cpu, dim=-1)
    got = project(gpu, dim=-1)
    torch.testing.assert_close(got.cpu(), expected.detach(), atol=1e-5, rtol=1e-5)
    assert torch.isfinite(got).all()
    weights = torch.linspace(0.5, 1.5, cpu.shape[1])
    (expected * weights).sum().backward()
    (got * weights.to(DEVICE)).sum().backward()
    torch.testing.assert_close(gpu.grad.cpu(), cpu.grad, atol=1e-4, rtol=1e-4)


def test_attention_in_half_precision_keeps_rows_on_the_simplex():
    attention = Attention("dot", projection="sparsemax").to(DEVICE)
    query = torch.randn(4, 8, device=DEVICE)
    keys = torch.randn(4, 11, 8, device=DEVICE)
    mask = torch.ones(4, 11, dtype=torch.bool, device=DEVICE)
    mask[1, 5:] = False
    with torch.autocast(device_type=DEVICE.type, dtype=torch.float16 if DEVICE.type == "cuda" else torch.bfloat16):
        _, weights = attention(query, keys, mask=mask)
    assert torch.isfinite(weights).all() and (weights[1, 5:] == 0).all()
    torch.testing.assert_close(weights.float().sum(-1), torch.ones(4, device=DEVICE), atol=1e-2, rtol=0)


def tiny_translation() -> tuple[Seq2Seq, object]:
    torch.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(src_vocab=30, tgt_vocab=30, embed_dim=16, hidden_dim=16, attention_dim=16,
                                  encoder_layers=2, decoder_layers=2, dropout=0.0, projection="sparsemax"))
    generator = torch.Generator().manual_seed(1)
    pairs = [(torch.randint(3, 30, (n,), generator=generator).tolist(),
              torch.randint(3, 30, (n + 1,), generator=generator).tolist()) for n in (5, 7, 3, 6)]
    return model, make_batch(pairs, bos=1, eos=2)


def on(device: torch.device, batch: object) -> object:
    return type(batch)(*(tensor.to(device) for tensor in batch))


def test_seq2seq_forward_and_beam_search_match_the_cpu():
    model, batch = tiny_translation()
    log_probs, attention = model.eval()(batch.src, batch.src_mask, batch.tgt_in)
    expected = model.translate(batch.src, batch.src_mask, bos=1, eos=2, max_len=12, beam_size=3)
    model.to(DEVICE)
    moved = on(DEVICE, batch)
    got_log_probs, got_attention = model(moved.src, moved.src_mask, moved.tgt_in)
    torch.testing.assert_close(got_log_probs.cpu(), log_probs, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got_attention.cpu(), attention, atol=1e-4, rtol=1e-4)
    got = model.translate(moved.src, moved.src_mask, bos=1, eos=2, max_len=12, beam_size=3)
    assert got.tokens == expected.tokens


def test_a_penalty_gradient_through_the_seq2seq_model_in_eval_mode_matches_the_cpu():
    """Chapter 10's cell: the gradient of an attention penalty with dropout off. cuDNN's LSTM has no backward
    in eval mode, so the chapter turns cuDNN off for it."""
    model, batch = tiny_translation()

    def gradient_norm(model: Seq2Seq, batch: object) -> torch.Tensor:
        model.zero_grad(set_to_none=True)
        with torch.backends.cudnn.flags(enabled=False):
            _, attention = model.eval()(batch.src, batch.src_mask, batch.tgt_in)
            (attention.clamp(min=1e-12).log() * attention).sum().backward()
        return torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters() if p.grad is not None))

    expected = gradient_norm(model, batch)
    got = gradient_norm(model.to(DEVICE), on(DEVICE, batch))
    torch.testing.assert_close(got.cpu(), expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("penalty", [None, "entropy", "linf"])
def test_one_mixed_precision_training_step_of_the_seq2seq_model(penalty):
    model, batch = tiny_translation()
    history = train(model, [batch], lambda m, b: seq2seq_loss(m, b, penalty=penalty, lam=0.01),
                    TrainConfig(epochs=1, lr=1e-3, device=DEVICE, amp=True))
    assert len(history.steps) == 1 and torch.isfinite(torch.tensor(history.steps[0]["loss"]))


@pytest.mark.parametrize("config", [meister_config("bilstm", 50, projection="sparsemax"),
                                    meister_config("transformer", 50, projection="entmax15"),
                                    sun_lu_config("DP", 50)], ids=["bilstm", "transformer", "sun-lu-DP"])
def test_classifiers_match_the_cpu_and_train_in_mixed_precision(config):
    torch.manual_seed(0)
    model = AttentionClassifier(config).eval()
    ids = torch.randint(1, 50, (3, 9), generator=torch.Generator().manual_seed(2))
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[2, 6:] = False
    expected = model(ids, mask)
    model.to(DEVICE)
    got = model(ids.to(DEVICE), mask.to(DEVICE))
    torch.testing.assert_close(got.logits.cpu(), expected.logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got.weights.cpu(), expected.weights, atol=1e-4, rtol=1e-4)
    labels = torch.tensor([0.0, 1.0, 1.0])

    def loss(m, batch):
        logits = m(batch[0], batch[1]).logits
        return torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), batch[2]), {}

    history = train(model.train(), [(ids, mask, labels)], loss, TrainConfig(epochs=1, lr=1e-3, device=DEVICE, amp=True))
    assert torch.isfinite(torch.tensor(history.steps[0]["loss"]))


def test_pointer_generator_matches_the_cpu():
    torch.manual_seed(0)
    model = PointerGenerator(PointerGeneratorConfig(vocab_size=40, embedding_dim=16, hidden_dim=16, attention_dim=16,
                                                    coverage=True)).eval()
    generator = torch.Generator().manual_seed(3)
    source = torch.randint(2, 40, (2, 10), generator=generator)
    extended = source.clone()
    extended[0, 3] = 40  # one source word outside the vocabulary, copied from the extended vocabulary
    mask = torch.ones(2, 10, dtype=torch.bool)
    target = torch.randint(2, 40, (2, 6), generator=generator)
    expected = model(source, mask, target, extended, 41)
    model.to(DEVICE)
    got = model(source.to(DEVICE), mask.to(DEVICE), target.to(DEVICE), extended.to(DEVICE), 41)
    for name in ("log_probs", "attention", "p_gen", "coverage"):
        torch.testing.assert_close(getattr(got, name).cpu(), getattr(expected, name), atol=1e-4, rtol=1e-4)


def test_the_part_iii_analyses_run_on_the_models_device_and_match_the_cpu():
    """Chapters 13-14's measures on a model on the GPU with a split on the CPU: the analyses move the split
    to the model (:func:`on_device_of`) and give the CPU's numbers. In float64: in float32 cuDNN's LSTM runs in
    TF32 by default (``torch.backends.cudnn.allow_tf32``), which moved the leave-one-out entropy by 1.6e-4 on an
    H200, a rounding difference and not a device bug."""
    from sparse_tutorial.experiments.classification import Split
    from sparse_tutorial.experiments.explanation import erasure_flips, permutation
    from sparse_tutorial.experiments.interpretability import importance_statistics

    torch.manual_seed(0)
    model = AttentionClassifier(meister_config("bilstm", 50, projection="sparsemax")).double().eval()
    generator = torch.Generator().manual_seed(4)
    ids = torch.randint(1, 50, (6, 12), generator=generator)
    mask = torch.ones(6, 12, dtype=torch.bool)
    mask[3, 7:] = False
    split = Split(ids, mask, torch.tensor([0, 1, 1, 0, 1, 0]))
    expected = (importance_statistics(model, split), erasure_flips(model, split), permutation(model, split))
    model.to(DEVICE)
    got = (importance_statistics(model, split), erasure_flips(model, split), permutation(model, split))
    for key in ("entropy_gradient", "entropy_loo", "entropy_attention", "entropy_intermediate", "tau_loo"):
        assert got[0][key] == pytest.approx(expected[0][key], abs=1e-6), key
    assert {name: flips.cpu().tolist() for name, flips in got[1].items()} == \
        {name: flips.tolist() for name, flips in expected[1].items()}
    assert got[2]["median_output_change"] == pytest.approx(expected[2]["median_output_change"], abs=1e-6)
