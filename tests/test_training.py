"""Tests for sparse_tutorial.training: the loop learns, stops early, restores the best epoch, resumes."""
import random
from collections import namedtuple
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch import nn

from sparse_tutorial.training import (History, TrainConfig, checkpoint_every_epoch, load_checkpoint, move_to,
                                      train)

Batch = namedtuple("Batch", "x y")


def regression_batches(seed: int = 0, n_batches: int = 8) -> list[Batch]:
    g = torch.Generator().manual_seed(seed)
    w = torch.tensor([[2.0], [-1.0], [0.5]])
    out = []
    for _ in range(n_batches):
        x = torch.randn(16, 3, generator=g)
        out.append(Batch(x, x @ w + 0.01 * torch.randn(16, 1, generator=g)))
    return out


def mse(model, batch):
    loss = nn.functional.mse_loss(model(batch.x), batch.y)
    return loss, {"tokens": float(batch.x.shape[0])}


def make_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Linear(3, 1)


def test_loss_decreases_and_history_is_recorded():
    model = make_model()
    history = train(model, regression_batches(), mse, TrainConfig(epochs=5, lr=0.05, device="cpu"))
    assert len(history.epochs) == 5 and len(history.steps) == 40
    assert history.epochs[-1]["loss"] < 0.1 * history.epochs[0]["loss"]
    assert history.steps[3]["tokens"] == 16.0 and history.throughput() > 0
    assert history.to_dict()["epochs"][0]["epoch"] == 0
    assert history.best_epoch == 4 and history.best_dev is None


def test_same_seed_same_result():
    a, b = make_model(), make_model()
    cfg = TrainConfig(epochs=2, lr=0.05, device="cpu")
    train(a, regression_batches(), mse, cfg)
    train(b, regression_batches(), mse, cfg)
    assert torch.equal(a.weight, b.weight)


def test_early_stopping_restores_best_epoch():
    model = make_model()
    scores = iter([1.0, 3.0, 2.0, 2.5, 0.0, 9.0])
    weights = []

    def dev(m):
        weights.append(m.weight.detach().clone())
        return next(scores)

    history = train(model, regression_batches(), mse, TrainConfig(epochs=6, lr=0.05, patience=2, device="cpu"),
                    dev_fn=dev)
    assert history.stopped_early and len(history.epochs) == 4
    assert history.best_epoch == 1 and history.best_dev == 3.0
    assert torch.equal(model.weight, weights[1])
    assert [e["dev"] for e in history.epochs] == [1.0, 3.0, 2.0, 2.5]


def test_checkpoint_resume_matches_uninterrupted_run(tmp_path):
    def batches(epoch):
        g = torch.Generator().manual_seed(epoch)
        data = regression_batches(seed=0)
        return [data[i] for i in torch.randperm(len(data), generator=g)]

    straight = make_model()
    h_straight = train(straight, batches, mse, TrainConfig(epochs=4, lr=0.05, device="cpu"))

    path = tmp_path / "ckpt.pt"
    resumed = make_model()
    train(resumed, batches, mse, TrainConfig(epochs=2, lr=0.05, device="cpu", checkpoint_path=path))
    assert path.exists()
    fresh = make_model(seed=123)  # different init: everything must come from the checkpoint
    h_resumed = train(fresh, batches, mse, TrainConfig(epochs=4, lr=0.05, device="cpu", checkpoint_path=path))
    assert torch.allclose(fresh.weight, straight.weight) and torch.allclose(fresh.bias, straight.bias)
    assert len(h_resumed.epochs) == 4 and len(h_resumed.steps) == len(h_straight.steps)
    assert h_resumed.epochs[3]["loss"] == pytest.approx(h_straight.epochs[3]["loss"])


def test_calls_inside_checkpoint_every_epoch_get_their_own_checkpoints(tmp_path):
    config = TrainConfig(epochs=2, lr=0.05, device="cpu")
    with checkpoint_every_epoch(tmp_path / "run"):
        train(make_model(), regression_batches(), mse, config)
        train(make_model(), regression_batches(), mse, config)
        train(make_model(), regression_batches(), mse, replace(config, checkpoint_path=tmp_path / "own.ckpt"))
    train(make_model(), regression_batches(), mse, config)  # outside the block: no checkpoint
    assert sorted(p.name for p in tmp_path.iterdir()) == ["own.ckpt", "run.train0.ckpt", "run.train1.ckpt"]
    assert load_checkpoint(tmp_path / "run.train1.ckpt")["epoch"] == 1


def test_a_resumed_run_continues_every_generator(tmp_path):
    """Dropout draws from torch's generator, a loss may draw from Python's or NumPy's: the resumed epochs draw
    what the uninterrupted run drew."""
    def noisy(model, batch):
        noise = torch.rand(()) + random.random() + float(np.random.rand())
        return mse(model, batch)[0] * (1 + 0.01 * noise), {"noise": float(noise)}

    config = TrainConfig(epochs=3, lr=0.05, device="cpu", checkpoint_path=tmp_path / "noisy.ckpt")
    straight = train(make_model(), regression_batches(), noisy, replace(config, checkpoint_path=None))
    train(make_model(), regression_batches(), noisy, replace(config, epochs=1))
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    resumed = train(make_model(), regression_batches(), noisy, config)
    assert [s["noise"] for s in resumed.steps] == [s["noise"] for s in straight.steps]


def test_the_learning_rate_decays_from_lr_decay_start():
    config = TrainConfig(epochs=4, lr=1.0, optimizer="sgd", grad_clip=None, lr_decay_start=2, device="cpu")
    assert [config.learning_rate(e) for e in range(4)] == [1.0, 1.0, 0.5, 0.25]
    model = nn.Linear(1, 1, bias=False)
    nn.init.zeros_(model.weight)
    train(model, [Batch(None, None)], lambda m, batch: (m.weight.sum(), {}), config)
    assert model.weight.item() == -2.75  # one step per epoch, each of gradient 1: minus the sum of the rates


def test_a_run_resumed_during_the_decay_continues_it(tmp_path):
    config = TrainConfig(epochs=5, lr=0.05, lr_decay_start=1, device="cpu", checkpoint_path=tmp_path / "c.ckpt")
    straight = make_model()
    train(straight, regression_batches(), mse, replace(config, checkpoint_path=None))
    train(make_model(), regression_batches(), mse, replace(config, epochs=3))
    resumed = make_model(seed=5)
    train(resumed, regression_batches(), mse, config)
    assert torch.equal(resumed.weight, straight.weight)


def test_grad_clip_bounds_the_update():
    model = make_model()
    before = model.weight.detach().clone()
    big = [Batch(torch.full((4, 3), 100.0), torch.full((4, 1), -1e4))]
    train(model, big, mse, TrainConfig(epochs=1, lr=1.0, optimizer="sgd", grad_clip=1.0, device="cpu"))
    assert (model.weight - before).norm() <= 1.0 + 1e-5


def test_max_steps_per_epoch():
    history = train(make_model(), regression_batches(), mse,
                    TrainConfig(epochs=2, device="cpu", max_steps_per_epoch=3))
    assert len(history.steps) == 6


def test_non_finite_loss_raises():
    def bad(model, batch):
        return model(batch.x).sum() * float("nan"), {}

    with pytest.raises(FloatingPointError):
        train(make_model(), regression_batches(), bad, TrainConfig(epochs=1, device="cpu"))


@pytest.mark.parametrize("kwargs", [{"epochs": 0}, {"lr": 0.0}, {"optimizer": "lbfgs"}, {"grad_clip": -1.0},
                                    {"lr_decay": 0.0}, {"lr_decay": 1.5}, {"lr_decay_start": -1},
                                    {"patience": 0}])
def test_bad_config_names_the_argument(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        TrainConfig(**kwargs)


def test_move_to_handles_nesting():
    batch = {"a": (torch.zeros(1), [torch.ones(2)]), "b": Batch(torch.zeros(1), 3)}
    moved = move_to(batch, torch.device("cpu"))
    assert isinstance(moved["b"], Batch) and moved["b"].y == 3
    assert torch.equal(moved["a"][1][0], torch.ones(2))


def test_history_default_is_empty():
    assert History().to_dict() == {"steps": [], "epochs": [], "best_epoch": None, "best_dev": None,
                                   "stopped_early": False}
