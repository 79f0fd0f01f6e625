"""Chapter 9's quick protocol: every system fine-tuned from one baseline per seed.

Zhang et al. train every system from scratch, and so does the stored run
(:func:`~sparse_tutorial.experiments.nmt_training.train_system`). Chapter 9's own run must take minutes on a
CPU, so there each seed trains the baseline once (:func:`pretrain`) and every system -- the baseline
included, as the control -- continues from that checkpoint for the same number of steps with its own
attention and loss (:func:`finetune`, :func:`run_system`). The baselines are cached
(:func:`baseline_weights`), so chapters 8 and 9 start from the same weights. Fine-tuning is cheap, but an
intervention that needs training to act barely acts in it: the chapter says so, and judges the paper's
claims on the stored run only.

No run of the stored grid calls this module (it is left out of the ``nmt`` runs' code fingerprint,
:mod:`~sparse_tutorial.experiments.records`).
"""
from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import torch

from sparse_tutorial.data.cache import cache_dir
from sparse_tutorial.experiments.nmt_data import TranslationData
from sparse_tutorial.experiments.nmt_training import (
    SIZES, SYSTEMS, Sizes, System, batches_for, build_model, loss_for, test_system, train_system,
)
from sparse_tutorial.models.seq2seq import Seq2Seq
from sparse_tutorial.profiles import seed_everything
from sparse_tutorial.training import History, LossFn, TrainConfig, load_checkpoint, save_checkpoint, train


@dataclass(frozen=True)
class Finetuning:
    """How long and how fast every system continues from the baseline."""

    steps: int
    learning_rate: float


FINETUNING: dict[str, Finetuning] = {"quick": Finetuning(steps=30, learning_rate=1e-3),
                                     "medium": Finetuning(steps=150, learning_rate=1e-3),
                                     "full": Finetuning(steps=1000, learning_rate=5e-4)}
"""Per profile (``medium`` is what the stored run of 2026-11 used before it trained from scratch)."""


def pretrain(data: TranslationData, sizes: Sizes, seed: int, device: torch.device | str,
             progress: bool = False) -> tuple[Seq2Seq, History]:
    """Train the baseline (``NMT``) with ``seed`` (:func:`~sparse_tutorial.experiments.nmt_training.train_system`)."""
    model, history, _ = train_system(SYSTEMS["NMT"], data, sizes, seed, device, progress)
    return model, history


def finetune(system: System, baseline: dict[str, torch.Tensor], data: TranslationData, sizes: Sizes,
             finetuning: Finetuning, seed: int, device: torch.device | str, loss_fn: LossFn | None = None
             ) -> tuple[Seq2Seq, History]:
    """Continue the ``baseline`` weights for ``finetuning.steps`` steps as ``system`` (its projection,
    coverage and loss; ``loss_fn`` replaces :func:`~sparse_tutorial.experiments.nmt_training.loss_for` --
    plug in your own regularizer). Parameters the baseline lacks (the coverage model) start from their
    initialisation."""
    seed_everything(seed)
    model = build_model(system, sizes, len(data.src_vocab), len(data.tgt_vocab))
    missing, unexpected = model.load_state_dict(baseline, strict=False)
    new = [k for k in missing if "coverage" not in k and not k.startswith("eval_attention.")]
    if unexpected or new:
        raise ValueError(f"the baseline weights do not fit {system}: unexpected {unexpected}, missing {new}")
    history = train(model, batches_for(data, sizes, seed, offset=500), loss_fn or loss_for(system),
                    TrainConfig(epochs=1, lr=finetuning.learning_rate, seed=seed, device=device, grad_clip=5.0,
                                max_steps_per_epoch=finetuning.steps))
    return model, history


class SystemRun(NamedTuple):
    """A fine-tuned system and what it produced on the test set."""

    model: Seq2Seq
    history: History
    outputs: list[list[str]]
    attention: list[torch.Tensor]
    metrics: dict[str, float]


def run_system(system: System, baseline: dict[str, torch.Tensor], data: TranslationData, sizes: Sizes,
               finetuning: Finetuning, seed: int, device: torch.device | str, controls: bool = False,
               loss_fn: LossFn | None = None) -> SystemRun:
    """:func:`finetune` ``system`` from ``baseline`` and evaluate it on the test set
    (:func:`~sparse_tutorial.experiments.nmt_training.test_system`)."""
    model, history = finetune(system, baseline, data, sizes, finetuning, seed, device, loss_fn)
    return SystemRun(model, history, *test_system(model, history, data, sizes, seed, controls))


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (POSIX ``flock``; no lock where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:  # Windows: concurrent sweeps may train a baseline twice, which is only slower
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def baseline_path(profile: str, seed: int, data: TranslationData, sizes: Sizes | None = None) -> Path:
    """Where the baseline of ``seed`` at ``profile`` is cached: ``<data cache>/checkpoints``, the file name
    hashing the sizes, the parameter shapes, the data and the seed."""
    sizes = sizes or SIZES[profile]
    shapes = {k: list(v.shape) for k, v in
              build_model(SYSTEMS["NMT"], sizes, len(data.src_vocab), len(data.tgt_vocab)).state_dict().items()}
    key = hashlib.sha256(json.dumps([asdict(sizes), shapes, len(data.train), data.train[:3], data.dev[:3], seed],
                                    sort_keys=True, default=str).encode()).hexdigest()[:16]
    return cache_dir() / "checkpoints" / f"nmt-{profile}-seed{seed}-{key}.pt"


def save_baseline(path: Path, model: Seq2Seq, history: History) -> None:
    """Store a trained baseline (weights on the CPU, and its history) where :func:`baseline_weights` finds it."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    save_checkpoint(path, {"model": state, "history": history.to_dict()})


def baseline_weights(profile: str, seed: int, data: TranslationData, device: torch.device | str,
                     sizes: Sizes | None = None) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The baseline of ``seed`` at ``profile`` (weights, and the :class:`History` as a dict): loaded from
    :func:`baseline_path`, or trained by :func:`pretrain` and stored there. A lock lets parallel runs of a
    sweep wait for one training instead of repeating it."""
    path = baseline_path(profile, seed, data, sizes)
    with _locked(path.with_suffix(".lock")):
        if not path.exists():
            save_baseline(path, *pretrain(data, sizes or SIZES[profile], seed, device))
        stored = load_checkpoint(path)
    return stored["model"], stored["history"]
