"""Findings 9 and 11 of issue 19: training never saves or returns non-finite weights, a NaN dev score is no
improvement, and a checkpoint is written all at once, checksummed and only resumed by the run that wrote it."""
import math

import pytest
import torch
from torch import nn

from sparse_tutorial import training
from sparse_tutorial.training import CheckpointError, TrainConfig, load_checkpoint, train

from test_training import make_model, mse, regression_batches


def nan_gradient_at(step: int):
    """A loss function like ``mse`` whose gradient is NaN at global step ``step`` (its loss stays finite)."""
    calls = []

    def loss_fn(model, batch):
        output = model(batch.x)
        if len(calls) == step:
            output.register_hook(lambda grad: grad * float("nan"))
        calls.append(1)
        return nn.functional.mse_loss(output, batch.y), {}

    return loss_fn


def all_finite(model: nn.Module) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


def test_nan_gradient_on_the_last_step_raises_naming_step_and_epoch():
    config = TrainConfig(epochs=2, lr=0.05, grad_clip=None, device="cpu")
    with pytest.raises(FloatingPointError, match=r"parameter 'weight' became NaN or infinite at step 15 \(epoch 1\)"):
        train(make_model(), regression_batches(), nan_gradient_at(15), config)


def test_nan_weights_mid_run_are_not_checkpointed_and_resume_works(tmp_path):
    path = tmp_path / "ckpt.pt"
    config = TrainConfig(epochs=3, lr=0.05, grad_clip=None, device="cpu", checkpoint_path=path)
    with pytest.raises(FloatingPointError, match=r"step 15 \(epoch 1\)"):
        train(make_model(), regression_batches(), nan_gradient_at(15), config)
    assert load_checkpoint(path)["epoch"] == 0  # the last good checkpoint
    resumed = make_model()
    history = train(resumed, regression_batches(), mse, config)
    assert len(history.epochs) == 3 and all_finite(resumed)


def test_nan_dev_score_is_no_improvement():
    scores = iter([float("nan"), 0.3, 0.5, 0.4])
    weights = []

    def dev(model):
        weights.append(model.weight.detach().clone())
        return next(scores)

    model = make_model()
    history = train(model, regression_batches(), mse, TrainConfig(epochs=4, lr=0.05, patience=2, device="cpu"),
                    dev_fn=dev)
    assert not history.stopped_early and len(history.epochs) == 4
    assert history.best_epoch == 2 and history.best_dev == 0.5
    assert torch.equal(model.weight, weights[2])


def test_no_finite_dev_score_keeps_the_last_epoch():
    model = make_model()
    history = train(model, regression_batches(), mse, TrainConfig(epochs=2, lr=0.05, device="cpu"),
                    dev_fn=lambda m: float("nan"))
    assert history.best_epoch == 1 and history.best_dev is None and all_finite(model)


@pytest.mark.parametrize("change, message", [
    ({"config": {"lr": 0.5}}, r"lr = 0\.01 in the checkpoint, 0\.5 now"),
    ({"config": {"optimizer": "sgd", "seed": 3}}, r"optimizer = 'adam' in the checkpoint, 'sgd' now; seed = 0"),
    ({"data_seed": 1}, r"the training data"),
    ({"model": nn.Linear(3, 2)}, r"the model's parameter names or shapes"),
])
def test_resume_with_another_run_is_refused_naming_the_differences(tmp_path, change, message):
    path = tmp_path / "ckpt.pt"
    train(make_model(), regression_batches(), mse,
          TrainConfig(epochs=1, lr=0.01, device="cpu", checkpoint_path=path))
    config = TrainConfig(**{"epochs": 2, "lr": 0.01, "device": "cpu", "checkpoint_path": path,
                            **change.get("config", {})})
    model = change.get("model", make_model())
    with pytest.raises(CheckpointError, match=f"written by a different run .*{message}"):
        train(model, regression_batches(seed=change.get("data_seed", 0)), mse, config)


def test_bit_flipped_checkpoint_is_refused(tmp_path):
    path = tmp_path / "ckpt.pt"
    config = TrainConfig(epochs=1, lr=0.05, device="cpu", checkpoint_path=path)
    train(make_model(), regression_batches(), mse, config)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x10
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="is corrupt .*delete it to train from scratch"):
        train(make_model(), regression_batches(), mse, TrainConfig(epochs=2, lr=0.05, device="cpu",
                                                                   checkpoint_path=path))


def test_a_foreign_file_is_not_taken_for_a_checkpoint(tmp_path):
    path = tmp_path / "ckpt.pt"
    torch.save({"model": make_model().state_dict()}, path)
    with pytest.raises(CheckpointError, match="is not a checkpoint of sparse_tutorial.training"):
        train(make_model(), regression_batches(), mse, TrainConfig(epochs=1, device="cpu", checkpoint_path=path))


def test_disk_full_while_checkpointing_keeps_the_previous_checkpoint(tmp_path, fill_disk_mid_write):
    path = tmp_path / "ckpt.pt"
    train(make_model(), regression_batches(), mse,
          TrainConfig(epochs=1, lr=0.05, device="cpu", checkpoint_path=path))
    fill_disk_mid_write()
    with pytest.raises(OSError, match="No space left"):
        train(make_model(), regression_batches(), mse,
              TrainConfig(epochs=2, lr=0.05, device="cpu", checkpoint_path=path))
    kept = load_checkpoint(path)
    assert kept["epoch"] == 0 and math.isfinite(kept["history"]["epochs"][0]["loss"])
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]


def test_device_values_are_read_every_read_every_steps_and_the_first_bad_step_is_still_named(monkeypatch):
    """Issue 33: no per-step host sync. The losses and the finiteness of the parameters wait on the device
    and are read READ_EVERY steps at a time (and at the end of each epoch); a NaN is still traced to its
    step."""
    reads = []
    read_steps = training._read_steps
    monkeypatch.setattr(training, "_read_steps", lambda pending, *args: reads.append(len(pending)) or read_steps(pending, *args))
    monkeypatch.setattr(training, "READ_EVERY", 3)
    batches = regression_batches()
    config = TrainConfig(epochs=2, lr=0.05, grad_clip=None, device="cpu")
    history = train(make_model(), batches, mse, config)
    per_epoch = len(batches)
    assert reads == 2 * ([3] * (per_epoch // 3) + [per_epoch % 3])
    assert [record["step"] for record in history.steps] == list(range(2 * per_epoch))
    with pytest.raises(FloatingPointError, match=r"at step 4 \(epoch 0\)"):
        train(make_model(), batches, nan_gradient_at(4), config)
