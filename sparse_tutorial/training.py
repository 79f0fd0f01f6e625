"""One training loop for every model in the book (chapters 8-12 use it; chapter 8 explains it).

:func:`train` takes a model, the training batches, a ``loss_fn(model, batch) -> (loss, stats)`` and a
:class:`TrainConfig`, and returns a :class:`History`. It handles what every experiment needs and nothing
model-specific:

* the device (CUDA when present, else the CPU) and moving each batch onto it;
* seeding, so two runs with the same seed and batches are identical;
* gradient clipping (global L2 norm), mixed precision (``float16`` autocast with a gradient scaler; GPU only);
* early stopping on ``dev_fn(model) -> float`` (higher is better), restoring the best epoch's weights;
* a checkpoint after every epoch and resuming from it (``checkpoint_path``);
* a tqdm progress bar, and a per-step / per-epoch record of the loss and of every statistic ``loss_fn``
  reports (for example ``{"nll": ..., "entropy": ..., "tokens": ...}``).

Batches may be a list (the same order every epoch) or a callable ``epoch -> iterable`` (a fresh shuffle per
epoch that stays reproducible, which resuming from a checkpoint relies on).
"""
from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Union

import torch
from torch import Tensor, nn
from tqdm import tqdm

from sparse_tutorial.profiles import default_device, seed_everything

LossFn = Callable[[nn.Module, Any], "tuple[Tensor, dict[str, float]]"]
"""``loss_fn(model, batch) -> (loss, stats)``: a scalar loss to minimise and floats to record."""
DevFn = Callable[[nn.Module], float]
"""``dev_fn(model) -> score``: higher is better; called in eval mode without gradients after each epoch."""
Batches = Union[Iterable[Any], Callable[[int], Iterable[Any]]]
"""A re-iterable of batches, or ``epoch -> iterable of batches`` (epochs count from 0)."""


@dataclass
class TrainConfig:
    """Hyper-parameters of :func:`train`.

    Attributes:
        epochs: maximum number of passes over the training batches.
        lr: learning rate.
        optimizer: ``"adam"``, ``"sgd"`` or ``"adagrad"`` (Sun & Lu, chapter 11).
        weight_decay: L2 weight decay of the optimizer.
        grad_clip: clip the global gradient L2 norm to this value; ``None`` = no clipping.
        patience: stop after this many epochs without a better dev score; ``None`` = never stop early.
        seed: seeds Python, NumPy and PyTorch at the start of training.
        device: ``"cpu"``, ``"cuda"``, a :class:`torch.device`, or ``None`` for :func:`~sparse_tutorial.profiles.default_device`.
        amp: mixed precision (float16 autocast + gradient scaling); ignored unless the device is CUDA.
        checkpoint_path: write a checkpoint here after every epoch and resume from it when it exists.
        progress: show a tqdm progress bar.
        max_steps_per_epoch: stop each epoch after this many batches (benchmarks); ``None`` = all.
    """

    epochs: int = 10
    lr: float = 1e-3
    optimizer: str = "adam"
    weight_decay: float = 0.0
    grad_clip: float | None = 5.0
    patience: int | None = None
    seed: int = 0
    device: str | torch.device | None = None
    amp: bool = False
    checkpoint_path: str | Path | None = None
    progress: bool = False
    max_steps_per_epoch: int | None = None

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.optimizer not in ("adam", "sgd", "adagrad"):
            raise ValueError(f"optimizer must be 'adam', 'sgd' or 'adagrad', got {self.optimizer!r}")
        if self.grad_clip is not None and self.grad_clip <= 0:
            raise ValueError(f"grad_clip must be > 0 or None, got {self.grad_clip}")
        if self.patience is not None and self.patience < 1:
            raise ValueError(f"patience must be >= 1 or None, got {self.patience}")


@dataclass
class History:
    """What happened during :func:`train`.

    Attributes:
        steps: one dict per optimizer step: ``epoch``, ``step`` (global), ``loss``, ``seconds`` and the
            stats returned by ``loss_fn``.
        epochs: one dict per epoch: ``epoch``, ``loss`` (mean over steps), ``seconds``, the mean of every
            stat, and ``dev`` when a ``dev_fn`` was given.
        best_epoch: the epoch whose weights the model holds at the end (best dev score, else the last).
        best_dev: the dev score of ``best_epoch`` (``None`` without ``dev_fn``).
        stopped_early: whether patience ran out before ``epochs``.
    """

    steps: list[dict[str, float]] = field(default_factory=list)
    epochs: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int | None = None
    best_dev: float | None = None
    stopped_early: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return dataclasses.asdict(self)

    def throughput(self, key: str = "tokens") -> float:
        """``sum(stat[key]) / sum(seconds)`` over all steps, e.g. training tokens per second."""
        seconds = sum(s["seconds"] for s in self.steps)
        return sum(s.get(key, 0.0) for s in self.steps) / seconds if seconds > 0 else float("nan")


def move_to(batch: Any, device: torch.device) -> Any:
    """Move every tensor in ``batch`` (nested tuples, named tuples, lists, dicts, objects with ``.to``)."""
    if isinstance(batch, Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(move_to(x, device) for x in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_to(x, device) for x in batch)
    if isinstance(batch, dict):
        return {k: move_to(v, device) for k, v in batch.items()}
    if dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        return dataclasses.replace(batch, **{f.name: move_to(getattr(batch, f.name), device)
                                             for f in dataclasses.fields(batch) if f.init})
    return batch


def _make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if config.optimizer == "adam":
        return torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay)
    if config.optimizer == "adagrad":
        return torch.optim.Adagrad(params, lr=config.lr, weight_decay=config.weight_decay)
    return torch.optim.SGD(params, lr=config.lr, weight_decay=config.weight_decay)


def _epoch_batches(train_batches: Batches, epoch: int) -> Iterable[Any]:
    return train_batches(epoch) if callable(train_batches) else train_batches


def _mean_stats(records: list[dict[str, float]]) -> dict[str, float]:
    keys = [k for k in records[0] if k not in ("epoch", "step")] if records else []
    return {k: sum(r.get(k, 0.0) for r in records) / len(records) for k in keys}


def train(model: nn.Module, train_batches: Batches, loss_fn: LossFn, config: TrainConfig,
          dev_fn: DevFn | None = None) -> History:
    """Train ``model`` in place and return its :class:`History`.

    Args:
        model: any ``nn.Module``; moved to the configured device.
        train_batches: a list of batches, or ``epoch -> iterable of batches``.
        loss_fn: ``loss_fn(model, batch) -> (loss, stats)``, ``loss`` a scalar tensor to minimise.
        config: the :class:`TrainConfig`.
        dev_fn: ``dev_fn(model) -> float``, higher is better; drives early stopping and the best epoch.

    Returns:
        The :class:`History`. With ``dev_fn`` the model ends with the weights of its best dev epoch.
    """
    device = torch.device(config.device) if config.device is not None else default_device()
    use_amp = config.amp and device.type == "cuda"
    seed_everything(config.seed)
    model.to(device)
    optimizer = _make_optimizer(model, config)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    history = History()
    best_state: dict[str, Tensor] | None = None
    bad_epochs, start_epoch = 0, 0

    path = Path(config.checkpoint_path) if config.checkpoint_path is not None else None
    if path is not None and path.exists():
        ckpt = torch.load(path, map_location=device, weights_only=False)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scaler.load_state_dict(ckpt["scaler"])
        history = History(**ckpt["history"])
        best_state, bad_epochs, start_epoch = ckpt["best_state"], ckpt["bad_epochs"], ckpt["epoch"] + 1
        torch.set_rng_state(ckpt["rng"])
        if history.stopped_early:
            start_epoch = config.epochs

    for epoch in range(start_epoch, config.epochs):
        model.train()
        records: list[dict[str, float]] = []
        epoch_start = time.perf_counter()
        batches = _epoch_batches(train_batches, epoch)
        bar = tqdm(batches, desc=f"epoch {epoch + 1}/{config.epochs}", disable=not config.progress,
                   leave=False)
        for batch in bar:
            if config.max_steps_per_epoch is not None and len(records) >= config.max_steps_per_epoch:
                break
            tic = time.perf_counter()
            batch = move_to(batch, device)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                loss, stats = loss_fn(model, batch)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"loss_fn returned a non-finite loss ({loss.item()}) at epoch {epoch}")
            scaler.scale(loss).backward()
            if config.grad_clip is not None:
                scaler.unscale_(optimizer)
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            scaler.step(optimizer)
            scaler.update()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            record = {"epoch": epoch, "step": len(history.steps), "loss": loss.item(),
                      "seconds": time.perf_counter() - tic, **{k: float(v) for k, v in stats.items()}}
            history.steps.append(record)
            records.append(record)
            bar.set_postfix(loss=f"{record['loss']:.3f}")
        summary = {"epoch": epoch, **_mean_stats(records), "seconds": time.perf_counter() - epoch_start}

        improved = True
        if dev_fn is not None:
            model.eval()
            with torch.no_grad():
                summary["dev"] = float(dev_fn(model))
            improved = history.best_dev is None or summary["dev"] > history.best_dev
            if improved:
                history.best_dev = summary["dev"]
                best_state = copy.deepcopy(model.state_dict())
        if improved:
            history.best_epoch = epoch
            bad_epochs = 0
        else:
            bad_epochs += 1
        history.epochs.append(summary)
        if config.patience is not None and bad_epochs >= config.patience and epoch + 1 < config.epochs:
            history.stopped_early = True
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scaler": scaler.state_dict(), "history": history.to_dict(), "best_state": best_state,
                        "bad_epochs": bad_epochs, "epoch": epoch, "rng": torch.get_rng_state()}, path)
        if history.stopped_early:
            break

    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return history
