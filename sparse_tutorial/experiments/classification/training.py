"""The training loop every Part III experiment shares: :func:`fit` trains an attention classifier on a
:class:`~sparse_tutorial.experiments.classification.data.Task` with :func:`training_loss` (the classification
loss, plus Sun & Lu's ``VᵀW`` regularizer or any extra term) and keeps the epoch that is best on dev;
:func:`accuracy` and :func:`correct_predictions` evaluate it, optionally with fixed attention weights such as
:func:`uniform_attention`. Chapters 12-14 import these names from
:mod:`~sparse_tutorial.experiments.classification`.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import torch
from torch import Tensor

from sparse_tutorial.experiments.classification.data import Split, Task, batches
from sparse_tutorial.models.classifier import (
    AttentionClassifier,
    ClassifierConfig,
    ClassifierOutput,
    classification_loss,
    predictions,
)
from sparse_tutorial.profiles import seed_everything
from sparse_tutorial.training import TrainConfig, epoch_generator, train

AttentionSource = Callable[[Tensor, Tensor], Tensor]
ExtraLoss = Callable[[AttentionClassifier, Tensor, Tensor, ClassifierOutput], Tensor]


@torch.no_grad()
def correct_predictions(model: AttentionClassifier, split: Split, attention_source: AttentionSource | None = None,
                        batch_size: int = 512) -> Tensor:
    """Which examples of ``split`` the model classifies correctly (eval mode), optionally with fixed
    attention weights: a CPU bool tensor ``(n,)``.

    Runs on the model's device (``split`` may stay on the CPU)."""
    model.eval()
    device = next(model.parameters()).device
    correct = []
    for start in range(0, len(split.labels), batch_size):
        ids, mask = split.token_ids[start:start + batch_size], split.mask[start:start + batch_size]
        width = int(mask.sum(-1).max().clamp(min=1))
        ids, mask = ids[:, :width].to(device), mask[:, :width].to(device)
        weights = attention_source(ids, mask) if attention_source is not None else None
        logits = model(ids, mask, attention_weights=weights).logits
        correct.append(predictions(logits).cpu() == split.labels[start:start + batch_size])
    return torch.cat(correct)


def accuracy(model: AttentionClassifier, split: Split, attention_source: AttentionSource | None = None,
             batch_size: int = 512) -> float:
    """Fraction of ``split`` classified correctly (:func:`correct_predictions`)."""
    return correct_predictions(model, split, attention_source, batch_size).float().mean().item()


class FitResult(NamedTuple):
    model: AttentionClassifier
    dev_accuracy: float
    test_accuracy: float
    best_epoch: int
    attention_source: AttentionSource | None = None   # used again at evaluation time


def training_loss(model: AttentionClassifier, batch: tuple[Tensor, Tensor, Tensor], vtw_weight: float = 0.0,
                  attention_source: AttentionSource | None = None,
                  extra_loss: ExtraLoss | None = None) -> tuple[Tensor, dict[str, float]]:
    """The loss :func:`fit` minimises on one batch ``(token_ids (B, T), mask (B, T), labels (B,))``: the
    classification loss (eq. 5), plus ``extra_loss(model, token_ids, mask, output)`` when given, plus Sun &
    Lu §5's regularizer ``vtw_weight · (VᵀW)²``. ``attention_source(token_ids, mask)`` replaces the learned
    attention weights ``(B, T)`` by fixed ones.

    Returns:
        ``(loss, {})``: a scalar and no statistics, as :func:`sparse_tutorial.training.train` expects.
    """
    ids, mask, labels = batch
    weights = attention_source(ids, mask) if attention_source is not None else None
    output = model(ids, mask, attention_weights=weights)
    loss = classification_loss(output.logits, labels)
    if extra_loss is not None:
        loss = loss + extra_loss(model, ids, mask, output)
    if vtw_weight:
        loss = loss + vtw_weight * model.vtw() ** 2
    return loss, {}


def fit(config: ClassifierConfig, task: Task, epochs: int = 5, lr: float = 0.05, batch_size: int = 32,
        seed: int = 0, optimizer: str = "adagrad", weight_decay: float = 0.0, vtw_weight: float = 0.0,
        attention_source: AttentionSource | None = None, extra_loss: ExtraLoss | None = None,
        device: str | torch.device = "cpu", patience: int | None = None) -> FitResult:
    """Train a classifier with :func:`sparse_tutorial.training.train`, keeping the best epoch on dev
    (Sun & Lu's model selection); ``patience`` stops after that many epochs without a better dev accuracy.
    Epoch ``e`` shuffles the training set with :func:`~sparse_tutorial.training.epoch_generator` ``(seed, e)``.

    ``device`` is where training runs: the CPU by default (the quick and medium profiles; these small models
    train in minutes there), ``"cuda"`` or :func:`~sparse_tutorial.profiles.default_device` for the full
    profile. The returned model is on the CPU, where a chapter's own cells use it; the experiments of
    chapters 13-14 move it back to ``device`` for their analyses.

    ``optimizer`` is "adagrad" (Sun & Lu) or "adam" (Meister et al.); ``weight_decay`` is the L2
    regularisation Sun & Lu use for DP-L, DP-A and AD; ``vtw_weight`` adds ``vtw_weight · (VᵀW)²`` to the
    loss (Sun & Lu §5's regularizer). ``attention_source(token_ids, mask)`` supplies fixed attention weights
    instead of the learned ones (the uniform and frozen baselines of chapter 14) and ``extra_loss(model,
    token_ids, mask, output)`` adds a term to the loss (the trained adversary of chapter 14).
    """
    seed_everything(seed)
    model = AttentionClassifier(config)
    loss_fn = functools.partial(training_loss, vtw_weight=vtw_weight, attention_source=attention_source,
                                extra_loss=extra_loss)
    history = train(model, lambda epoch: batches(task.train, batch_size, epoch_generator(seed, epoch)), loss_fn,
                    TrainConfig(epochs=epochs, lr=lr, optimizer=optimizer, weight_decay=weight_decay, seed=seed,
                                device=device, patience=patience),
                    dev_fn=lambda model: accuracy(model, task.dev, attention_source))
    model.to("cpu")
    return FitResult(model, history.best_dev, accuracy(model, task.test, attention_source),
                     history.best_epoch + 1, attention_source)


def uniform_attention(token_ids: Tensor, mask: Tensor) -> Tensor:
    """An attention source: uniform weights over the real tokens, ``(batch, seq_len)``."""
    return mask.float() / mask.sum(-1, keepdim=True).clamp(min=1)
