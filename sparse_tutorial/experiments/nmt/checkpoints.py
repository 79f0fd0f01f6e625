"""The quick systems of chapters 9 and 10, trained once per machine and cached.

Chapter 9 trains the baseline and chapter 10 the other quick systems of Table I, each from scratch with the
stored run's protocol (:func:`~sparse_tutorial.experiments.nmt.training.train_system`). Each trained
system is stored under ``<data cache>/checkpoints`` (:func:`checkpoint_path`), so chapter 10 reuses chapter
9's baseline and a chapter run twice loads its systems instead of training them again.

No run of the stored grid calls this module (it is left out of the ``nmt`` runs' code fingerprint,
:mod:`~sparse_tutorial.runs.records`).
"""
from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import torch

from sparse_tutorial.data.cache import cache_dir
from sparse_tutorial.experiments.nmt.data import TranslationData
from sparse_tutorial.experiments.nmt.training import SIZES, SYSTEMS, Sizes, build_model, train_system
from sparse_tutorial.hardware import cpu_backend
from sparse_tutorial.models.seq2seq import Seq2Seq
from sparse_tutorial.training import History, load_checkpoint, save_checkpoint


class TrainedSystem(NamedTuple):
    """A system trained by :func:`~sparse_tutorial.experiments.nmt.training.train_system`: the model (at its
    best dev epoch), its training :class:`History`, and the dev attention's measures after every epoch."""

    model: Seq2Seq
    history: History
    dev_attention: list[dict[str, float]]


def checkpoint_path(name: str, profile: str, seed: int, data: TranslationData, sizes: Sizes | None = None) -> Path:
    """Where system ``name`` of :data:`~sparse_tutorial.experiments.nmt.training.SYSTEMS` trained with
    ``seed`` at ``profile`` is cached: the file name hashes the system, the sizes, the parameter shapes, the
    data, the seed and the CPU back end (the kernels, an imitated CPU, the threads: a system trained under
    another back end is another model, and chapter 10 must not show it beside chapter 9's)."""
    sizes = sizes or SIZES[profile]
    system = SYSTEMS[name]
    shapes = {k: list(v.shape) for k, v in
              build_model(system, sizes, len(data.src_vocab), len(data.tgt_vocab)).state_dict().items()}
    backend = {k: v for k, v in cpu_backend().items() if k in ("torch_capability", "overrides", "torch_threads")}
    identity = [asdict(system), asdict(sizes), shapes, len(data.train), data.train[:3], data.dev[:3], seed, backend]
    key = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]
    slug = "".join(c if c.isalnum() else "-" for c in name).strip("-").lower() or "system"
    return cache_dir() / "checkpoints" / f"nmt-{profile}-{slug}-seed{seed}-{key}.pt"


def save_system(path: Path, trained: TrainedSystem) -> None:
    """Store ``trained`` (weights on the CPU, its history and dev measures) where :func:`trained_system` finds it."""
    state = {k: v.detach().cpu() for k, v in trained.model.state_dict().items()}
    save_checkpoint(path, {"model": state, "history": trained.history.to_dict(),
                           "dev_attention": trained.dev_attention})


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (POSIX ``flock``; no lock where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:  # Windows: two chapters executed at once may train a system twice, which is only slower
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def trained_system(name: str, profile: str, seed: int, data: TranslationData, device: torch.device | str,
                   sizes: Sizes | None = None, progress: bool = False) -> TrainedSystem:
    """System ``name`` trained from scratch with ``seed`` at ``profile`` (or ``sizes``): loaded from
    :func:`checkpoint_path`, else trained by :func:`~sparse_tutorial.experiments.nmt.training.train_system`
    and stored there."""
    sizes = sizes or SIZES[profile]
    path = checkpoint_path(name, profile, seed, data, sizes)
    with _locked(path.with_suffix(".lock")):
        if not path.exists():
            save_system(path, TrainedSystem(*train_system(SYSTEMS[name], data, sizes, seed, device, progress)))
        stored: dict[str, Any] = load_checkpoint(path)
    model = build_model(SYSTEMS[name], sizes, len(data.src_vocab), len(data.tgt_vocab))
    model.load_state_dict(stored["model"])
    return TrainedSystem(model.to(device), History(**stored["history"]), stored["dev_attention"])
