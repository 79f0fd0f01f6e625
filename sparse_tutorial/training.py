"""One training loop for every model in the book (chapters 9-13 use it; chapter 9 explains it).

:func:`train` takes a model, the training batches, a ``loss_fn(model, batch) -> (loss, stats)`` and a
:class:`TrainConfig`, and returns a :class:`History`. It handles what every experiment needs and nothing
model-specific:

* the device (CUDA when present, else the CPU) and moving each batch onto it;
* seeding, so two runs with the same seed and batches are identical;
* gradient clipping (global L2 norm), mixed precision (``float16`` autocast with a gradient scaler; GPU only);
* early stopping on ``dev_fn(model) -> float`` (higher is better; a NaN score counts as no improvement),
  restoring the best epoch's weights;
* a checkpoint after every epoch and resuming from it (``checkpoint_path``, or every call inside
  :func:`checkpoint_every_epoch`): see *Checkpoints* below;
* guards: a non-finite loss, or a step that leaves a parameter NaN or infinite, stops training with a
  :class:`FloatingPointError` naming the step, the epoch and the parameter, so non-finite weights are never
  checkpointed or returned (the loop reads such device values every :data:`READ_EVERY` steps, not every
  step, so that a GPU is never made to wait);
* a tqdm progress bar, and a per-step / per-epoch record of the loss and of every statistic ``loss_fn``
  reports (for example ``{"nll": ..., "entropy": ..., "tokens": ...}``).

Batches may be a list (the same order every epoch) or a callable ``epoch -> iterable`` (a fresh shuffle per
epoch that stays reproducible, which resuming from a checkpoint relies on). Every experiment of the book
shuffles epoch ``e`` of a run seeded ``s`` with :func:`epoch_seed` ``(s, e)``: one rule, so a run's order of
batches depends on its seed and the epoch only.

Checkpoints (:func:`save_checkpoint`, :func:`load_checkpoint`) are written all at once
(:func:`~sparse_tutorial.atomic.atomic_write_bytes`), so a kill or a full disk mid-write leaves the previous
one intact. The file is one header line ``sparse_tutorial checkpoint v1 sha256=<hex>`` followed by the
``torch.save`` bytes; loading checks the SHA-256, so a truncated or bit-flipped file is refused. The hash
proves integrity, not authorship (whoever can write the file can write a matching hash), so the bytes are
read with ``torch.load(weights_only=True)``: tensors, numbers, strings and containers only, never an object
whose unpickling runs code. Every state the loop saves is made of those (NumPy's generator state is stored as
a tensor); a file that needs anything else is refused, named, and never executed. Each holds
the run's :func:`run_fingerprint` -- the configuration (all but ``epochs``, ``device``, ``progress`` and
``checkpoint_path``, which may change when a run is resumed), the model's parameter names and shapes, and a
SHA-256 of the tensors of epoch 0's batches -- and :func:`train` refuses to resume a checkpoint whose
fingerprint differs, naming what differs. Every refusal is a :class:`CheckpointError`. A resumed run
continues with the generators' states (PyTorch, Python, NumPy) of the epoch it resumes after, so on the same
machine it computes what the uninterrupted run would have.

:func:`checkpoint_every_epoch` gives checkpoints to code that calls :func:`train` without asking for them:
the sweep of stored runs wraps each run in it, so a run killed mid-training (a session that ends, a machine
that restarts) resumes from its last finished epoch when the same grid runs again.
"""
from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses
import hashlib
import io
import math
import pickle
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Union

import numpy as np
import torch
from torch import Tensor, nn
from tqdm import tqdm

from sparse_tutorial.atomic import atomic_write_bytes
from sparse_tutorial.profiles import default_device, seed_everything

LossFn = Callable[[nn.Module, Any], "tuple[Tensor, dict[str, float]]"]
"""``loss_fn(model, batch) -> (loss, stats)``: a scalar loss to minimise and floats to record."""
DevFn = Callable[[nn.Module], "float | tuple[float, dict[str, Any]]"]
"""``dev_fn(model) -> score`` or ``(score, stats)``: higher scores are better; called in eval mode without
gradients after each epoch. ``stats`` (anything else measured on the dev set) is kept in the epoch's record
as ``dev_stats``, so that it is checkpointed and resumed with the rest of the history."""
Batches = Union[Iterable[Any], Callable[[int], Iterable[Any]]]
"""A re-iterable of batches, or ``epoch -> iterable of batches`` (epochs count from 0)."""


@dataclass
class TrainConfig:
    """Hyper-parameters of :func:`train`.

    Attributes:
        epochs: maximum number of passes over the training batches.
        lr: learning rate.
        lr_decay_start, lr_decay: from epoch ``lr_decay_start`` on (counting from 0), each epoch trains with
            the previous one's learning rate times ``lr_decay`` (Luong et al. 2015 halve it every epoch after
            the fifth); ``lr_decay_start=None``: the same learning rate throughout.
        optimizer: ``"adam"``, ``"sgd"`` or ``"adagrad"`` (Sun & Lu, chapter 12).
        weight_decay: L2 weight decay of the optimizer.
        grad_clip: clip the global gradient L2 norm to this value; ``None`` = no clipping.
        patience: stop after this many epochs without a better dev score; ``None`` = never stop early.
        seed: seeds Python, NumPy and PyTorch at the start of training.
        device: ``"cpu"``, ``"cuda"``, a :class:`torch.device`, or ``None`` for :func:`~sparse_tutorial.profiles.default_device`.
        amp: mixed precision (float16 autocast + gradient scaling); ignored unless the device is CUDA.
        checkpoint_path: write a checkpoint here after every epoch and resume from it when it exists;
            ``None``: none, unless :func:`train` is called inside :func:`checkpoint_every_epoch`.
        progress: show a tqdm progress bar.
        max_steps_per_epoch: stop each epoch after this many batches (benchmarks); ``None`` = all.
    """

    epochs: int = 10
    lr: float = 1e-3
    lr_decay_start: int | None = None
    lr_decay: float = 0.5
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

    def learning_rate(self, epoch: int) -> float:
        """The learning rate of epoch ``epoch`` (counting from 0)."""
        if self.lr_decay_start is None or epoch < self.lr_decay_start:
            return self.lr
        return self.lr * self.lr_decay ** (epoch - self.lr_decay_start + 1)

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.lr_decay_start is not None and self.lr_decay_start < 0:
            raise ValueError(f"lr_decay_start must be >= 0 or None, got {self.lr_decay_start}")
        if not 0 < self.lr_decay <= 1:
            raise ValueError(f"lr_decay must be in (0, 1], got {self.lr_decay}")
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
            stat, ``dev`` when a ``dev_fn`` was given, and ``dev_stats`` when it returned some.
        best_epoch: the epoch whose weights the model holds at the end (best dev score, else the last).
        best_dev: the dev score of ``best_epoch`` (``None`` without ``dev_fn``).
        stopped_early: whether patience ran out before ``epochs``.
    """

    steps: list[dict[str, float]] = field(default_factory=list)
    epochs: list[dict[str, Any]] = field(default_factory=list)
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


def epoch_seed(seed: int, epoch: int) -> int:
    """The seed of epoch ``epoch``'s shuffle in a run seeded ``seed``: ``seed * 1000 + epoch`` (distinct for
    every run and epoch below 1000; a later training phase of the same run passes ``offset + epoch``)."""
    if epoch < 0 or seed < 0:
        raise ValueError(f"seed and epoch must be >= 0, got seed={seed}, epoch={epoch}")
    return seed * 1000 + epoch


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with :func:`epoch_seed` ``(seed, epoch)``, for ``torch.randperm``."""
    return torch.Generator().manual_seed(epoch_seed(seed, epoch))


def map_tensors(batch: Any, fn: Callable[[Tensor], Tensor]) -> Any:
    """``batch`` with every tensor replaced by ``fn(tensor)``, through nested tuples, named tuples, lists,
    dicts and dataclasses; anything else is kept as is."""
    if isinstance(batch, Tensor):
        return fn(batch)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(map_tensors(x, fn) for x in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(map_tensors(x, fn) for x in batch)
    if isinstance(batch, dict):
        return {k: map_tensors(v, fn) for k, v in batch.items()}
    if dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        return dataclasses.replace(batch, **{f.name: map_tensors(getattr(batch, f.name), fn)
                                             for f in dataclasses.fields(batch) if f.init})
    return batch


def move_to(batch: Any, device: torch.device) -> Any:
    """Move every tensor in ``batch`` (nested tuples, named tuples, lists, dicts, dataclasses) to ``device``."""
    return map_tensors(batch, lambda tensor: tensor.to(device, non_blocking=True))


class CheckpointError(RuntimeError):
    """A checkpoint cannot be resumed: unreadable, corrupt, or written by a different run (message says which)."""


CHECKPOINT_HEADER = b"sparse_tutorial checkpoint v1 sha256="
"""The start of a checkpoint file's first line; the SHA-256 of the rest of the file follows it."""

RESUMABLE_CHANGES = ("epochs", "device", "progress", "checkpoint_path")
""":class:`TrainConfig` fields that may differ between a run and its resumption: more epochs continue the
run, and where it runs or what it shows do not change what it computes."""


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write ``state`` (anything ``torch.save`` takes) to ``path`` with its SHA-256, replacing the previous
    file all at once; creates the folder."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    body = buffer.getvalue()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, CHECKPOINT_HEADER + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """The state written by :func:`save_checkpoint` at ``path``, its tensors on the CPU.

    Raises:
        CheckpointError: the file is not such a checkpoint, or its content does not match its SHA-256.
    """
    header, _, body = Path(path).read_bytes().partition(b"\n")
    if not header.startswith(CHECKPOINT_HEADER):
        raise CheckpointError(f"{path} is not a checkpoint of sparse_tutorial.training (it does not start with "
                              f"{CHECKPOINT_HEADER.decode()!r}); delete it to train from scratch")
    if header[len(CHECKPOINT_HEADER):] != hashlib.sha256(body).hexdigest().encode():
        raise CheckpointError(f"checkpoint {path} is corrupt (truncated or changed on disk: its SHA-256 differs "
                              f"from the one recorded when it was written); delete it to train from scratch")
    try:
        return torch.load(io.BytesIO(body), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CheckpointError(f"checkpoint {path} holds more than tensors, numbers and containers, so reading it "
                              f"could run code, and it is refused ({reason}); it was not written by this version "
                              f"of sparse_tutorial: delete it to train from scratch") from None


@dataclass
class _CheckpointScope:
    prefix: Path
    calls: int = 0


_SCOPE: contextvars.ContextVar[_CheckpointScope | None] = contextvars.ContextVar("checkpoint_scope", default=None)


@contextlib.contextmanager
def checkpoint_every_epoch(prefix: str | Path) -> Iterator[None]:
    """Inside the block, every :func:`train` call whose config names no ``checkpoint_path`` checkpoints after
    each epoch to ``PREFIX.train<n>.ckpt`` (``n`` = 0, 1, … in the order of the calls) and resumes from it
    when it exists.

    Code that trains in several phases calls :func:`train` in the same order each time it runs, so call
    ``n`` finds its own checkpoint: a finished phase is restored from its last checkpoint at once, an
    interrupted one continues after its last finished epoch.
    """
    token = _SCOPE.set(_CheckpointScope(Path(prefix)))
    try:
        yield
    finally:
        _SCOPE.reset(token)


def _checkpoint_path(config: TrainConfig) -> Path | None:
    """``config.checkpoint_path``, else the next one of the enclosing :func:`checkpoint_every_epoch`, else None."""
    if config.checkpoint_path is not None:
        return Path(config.checkpoint_path)
    scope = _SCOPE.get()
    if scope is None:
        return None
    scope.calls += 1
    return Path(f"{scope.prefix}.train{scope.calls - 1}.ckpt")


def _generator_states() -> dict[str, Any]:
    """The generators' states in types that :func:`load_checkpoint` reads without unpickling objects: NumPy's
    ``(name, keys, position, has_gauss, gauss)`` with its ``uint32`` keys as an int64 tensor."""
    name, keys, position, has_gauss, gauss = np.random.get_state()
    return {"rng": torch.get_rng_state(), "python_rng": random.getstate(),
            "numpy_rng": (name, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, gauss)}


def _restore_generators(checkpoint: dict[str, Any]) -> None:
    torch.set_rng_state(checkpoint["rng"])
    random.setstate(checkpoint["python_rng"])
    name, keys, position, has_gauss, gauss = checkpoint["numpy_rng"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, gauss))


def _tensors_sha256(batches: Iterable[Any]) -> str:
    """SHA-256 of the dtype, shape and bytes of every tensor in ``batches``, in order."""
    digest = hashlib.sha256()

    def add(tensor: Tensor) -> Tensor:
        digest.update(f"{tensor.dtype}{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
        return tensor

    for batch in batches:
        map_tensors(batch, add)
    return digest.hexdigest()


def run_fingerprint(model: nn.Module, train_batches: Batches, config: TrainConfig) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: ``config`` (less :data:`RESUMABLE_CHANGES`), the model's
    parameter names and shapes, and the SHA-256 of the tensors of epoch 0's batches."""
    return {"config": {k: v for k, v in dataclasses.asdict(config).items() if k not in RESUMABLE_CHANGES},
            "parameters": {name: list(p.shape) for name, p in model.named_parameters()},
            "data_sha256": _tensors_sha256(_epoch_batches(train_batches, 0))}


def _fingerprint_differences(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    differences = [f"{key} = {stored['config'].get(key)!r} in the checkpoint, {value!r} now"
                   for key, value in current["config"].items() if stored["config"].get(key) != value]
    if stored["parameters"] != current["parameters"]:
        differences.append("the model's parameter names or shapes")
    if stored["data_sha256"] != current["data_sha256"]:
        differences.append("the training data (the tensors of epoch 0's batches)")
    return differences


READ_EVERY = 32
"""Steps between the loop's reads of the values that live on the device: each step's loss and statistics, and
whether every parameter is still finite. On a GPU a read waits for all the queued work, so reading every
step would stall it; the values wait on the device until they are read, and the guards still name the first
step that went wrong (training may run up to ``READ_EVERY - 1`` steps past it before it stops)."""


@dataclass
class _PendingStep:
    """A step whose device values have not been read yet."""

    step: int
    loss: Tensor                # 0-d, detached, on the device
    stats: dict[str, Any]       # tensors detached
    seconds: float
    parameters_finite: Tensor   # 0-d bool, on the device: every parameter finite after the step


def _parameters_finite(parameters: list[Tensor]) -> Tensor:
    """A 0-d bool tensor on the parameters' device: is every parameter free of NaN and infinities?"""
    if not parameters:
        return torch.tensor(True)
    return torch.stack([torch.isfinite(p).all() for p in parameters]).all()


def _read_steps(pending: list[_PendingStep], model: nn.Module, epoch: int) -> list[dict[str, float]]:
    """The records of the ``pending`` steps, read from the device at once.

    Raises:
        FloatingPointError: for the first of them whose loss is not finite, or after which a parameter is not.
    """
    if not pending:
        return []
    losses = torch.stack([entry.loss.to(torch.float64) for entry in pending]).tolist()
    finite = torch.stack([entry.parameters_finite for entry in pending]).tolist()
    records = []
    for entry, loss, parameters_ok in zip(pending, losses, finite):
        if not math.isfinite(loss):
            raise FloatingPointError(f"loss_fn returned a non-finite loss ({loss}) at step {entry.step} "
                                     f"(epoch {epoch})")
        if not parameters_ok:
            raise FloatingPointError(f"parameter {_non_finite_parameter(model)!r} became NaN or infinite at step "
                                     f"{entry.step} (epoch {epoch}): a non-finite gradient reached it; these "
                                     f"weights are neither saved nor returned")
        records.append({"epoch": epoch, "step": entry.step, "loss": loss, "seconds": entry.seconds,
                        **{k: float(v) for k, v in entry.stats.items()}})
    return records


def _non_finite_parameter(model: nn.Module) -> str | None:
    """The name of the first parameter holding a NaN or an infinity, else ``None`` (one device sync)."""
    named = list(model.named_parameters())
    if not named:
        return None
    finite = torch.stack([torch.isfinite(p).all() for _, p in named]).tolist()
    return next((name for (name, _), ok in zip(named, finite) if not ok), None)


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
        The :class:`History`. With ``dev_fn`` the model ends with the weights of its best dev epoch (the last
        epoch's when no dev score was finite).

    Raises:
        FloatingPointError: a loss, or a parameter after a step, is NaN or infinite (names the step and epoch).
        CheckpointError: ``config.checkpoint_path`` holds a corrupt checkpoint or one of a different run.
    """
    device = torch.device(config.device) if config.device is not None else default_device()
    use_amp = config.amp and device.type == "cuda"
    seed_everything(config.seed)
    model.to(device)
    optimizer = _make_optimizer(model, config)
    parameters = list(model.parameters())
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    history = History()
    best_state: dict[str, Tensor] | None = None
    bad_epochs, start_epoch = 0, 0

    path = _checkpoint_path(config)
    fingerprint = run_fingerprint(model, train_batches, config) if path is not None else None
    if path is not None and path.exists():
        ckpt = load_checkpoint(path)
        differences = _fingerprint_differences(ckpt["fingerprint"], fingerprint)
        if differences:
            raise CheckpointError(f"checkpoint {path} was written by a different run ({'; '.join(differences)}); "
                                  f"use another checkpoint_path, or delete it to train from scratch")
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scaler.load_state_dict(ckpt["scaler"])
        history = History(**ckpt["history"])
        best_state, bad_epochs, start_epoch = ckpt["best_state"], ckpt["bad_epochs"], ckpt["epoch"] + 1
        _restore_generators(ckpt)
        if history.stopped_early:
            start_epoch = config.epochs

    for epoch in range(start_epoch, config.epochs):
        model.train()
        if config.lr_decay_start is not None:
            for group in optimizer.param_groups:
                group["lr"] = config.learning_rate(epoch)
        records: list[dict[str, float]] = []
        epoch_start = time.perf_counter()
        batches = _epoch_batches(train_batches, epoch)
        bar = tqdm(batches, desc=f"epoch {epoch + 1}/{config.epochs}", disable=not config.progress,
                   leave=False)
        pending: list[_PendingStep] = []
        for batch in bar:
            if config.max_steps_per_epoch is not None and len(records) + len(pending) >= config.max_steps_per_epoch:
                break
            tic = time.perf_counter()
            batch = move_to(batch, device)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                loss, stats = loss_fn(model, batch)
            scaler.scale(loss).backward()
            if config.grad_clip is not None:
                scaler.unscale_(optimizer)
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            scaler.step(optimizer)
            scaler.update()
            pending.append(_PendingStep(
                len(history.steps) + len(pending), loss.detach(),
                {k: v.detach() if isinstance(v, Tensor) else v for k, v in stats.items()},
                time.perf_counter() - tic, _parameters_finite(parameters)))
            if len(pending) == READ_EVERY:
                read = _read_steps(pending, model, epoch)
                records += read
                history.steps += read
                pending = []
                bar.set_postfix(loss=f"{read[-1]['loss']:.3f}")
        read = _read_steps(pending, model, epoch)
        records += read
        history.steps += read
        summary = {"epoch": epoch, **_mean_stats(records), "seconds": time.perf_counter() - epoch_start}

        improved = dev_fn is None
        if dev_fn is not None:
            model.eval()
            with torch.no_grad():
                measured = dev_fn(model)
            score, dev_stats = measured if isinstance(measured, tuple) else (measured, None)
            summary["dev"] = float(score)
            if dev_stats is not None:
                summary["dev_stats"] = dict(dev_stats)
            improved = math.isfinite(summary["dev"]) and (history.best_dev is None
                                                          or summary["dev"] > history.best_dev)
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
            save_checkpoint(path, {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                   "scaler": scaler.state_dict(), "history": history.to_dict(),
                                   "best_state": best_state, "bad_epochs": bad_epochs, "epoch": epoch,
                                   **_generator_states(), "fingerprint": fingerprint})
        if history.stopped_early:
            break

    if best_state is not None:
        model.load_state_dict(best_state)
    elif history.epochs:  # no finite dev score (or no dev_fn): the model holds the last epoch's weights
        history.best_epoch = history.epochs[-1]["epoch"]
    model.eval()
    return history
