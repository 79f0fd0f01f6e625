"""Part I's running example: a lookup that attention must learn, small enough to train in seconds on a CPU.

A "sentence" holds ``length`` tokens (of a vocabulary of ``tokens``), each carrying a label (of ``labels``),
and the query is one of its tokens; the answer is the query's label. With ``copies = 1`` every token occurs
once and attention must find one key (one-to-one). With ``copies = 3`` the query's token occurs three times,
two of the three occurrences carry the answer and one carries another label: attention must spread its
weight over all three occurrences (many-to-one), because an attention that settles on one of them reads the
wrong label one time in three. A penalty that sharpens the attention can therefore cost accuracy here.

:class:`LookupModel` embeds the query and the keys, scores them with the scaled dot product, attends with a
projection (:mod:`sparse_tutorial.projections`) and reads the label off the context of the label embeddings.
:func:`train_lookup` trains it with Adam on fresh batches, adding ``weight × penalty(α)`` to the loss when
asked (:data:`~sparse_tutorial.regularizers.PENALTIES`), and measures the trained attention on fresh lookups.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from torch import Tensor, nn

from sparse_tutorial.attention import Attention
from sparse_tutorial.plotting import attention_heatmap, mark_links
from sparse_tutorial.profiles import seed_everything
from sparse_tutorial.projections import Projection
from sparse_tutorial.regularizers import PENALTIES, entropy


@dataclass(frozen=True)
class LookupTask:
    """The sizes of a lookup: ``length`` keys per sentence, ``tokens`` and ``labels`` in the vocabularies,
    ``copies`` occurrences of the query's token (1: one-to-one; 3: many-to-one, one occurrence mislabelled)."""

    length: int = 8
    tokens: int = 30
    labels: int = 5
    copies: int = 1

    def __post_init__(self) -> None:
        if self.copies not in (1, 3):
            raise ValueError(f"copies must be 1 (one-to-one) or 3 (many-to-one), got {self.copies}")
        if not 3 <= self.length <= self.tokens or self.labels < 2:
            raise ValueError(f"need 3 <= length <= tokens and at least 2 labels, got {self}")

    def sample(self, batch: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """``keys, labels: (batch, length)``, ``query: (batch,)`` and ``answer: (batch,)``, and where the
        query's token occurs, ``occurs: (batch, length)`` bool, drawn with ``generator``."""
        rows = torch.arange(batch)
        keys = torch.stack([torch.randperm(self.tokens, generator=generator)[:self.length] for _ in range(batch)])
        labels = torch.randint(0, self.labels, (batch, self.length), generator=generator)
        places = torch.stack([torch.randperm(self.length, generator=generator)[:self.copies] for _ in range(batch)])
        query = keys[rows, places[:, 0]]
        answer = labels[rows, places[:, 0]]
        if self.copies == 3:
            keys[rows[:, None], places] = query[:, None]
            labels[rows, places[:, 1]] = answer
            shift = torch.randint(1, self.labels, (batch,), generator=generator)
            labels[rows, places[:, 2]] = (answer + shift) % self.labels          # the mislabelled occurrence
        occurs = keys == query[:, None]
        return keys, labels, query, answer, occurs


class LookupModel(nn.Module):
    """Query and key embeddings, scaled dot-product attention with ``projection``, a linear read-out of the
    attended label embeddings."""

    def __init__(self, task: LookupTask, dim: int = 16, projection: str | Projection = "softmax") -> None:
        super().__init__()
        self.key_embedding, self.query_embedding = nn.Embedding(task.tokens, dim), nn.Embedding(task.tokens, dim)
        self.label_embedding = nn.Embedding(task.labels, dim)
        self.attention = Attention("scaled_dot", projection=projection)
        self.out = nn.Linear(dim, task.labels)

    def forward(self, keys: Tensor, labels: Tensor, query: Tensor) -> tuple[Tensor, Tensor]:
        """``logits: (batch, labels)`` and the attention ``weights: (batch, length)``."""
        context, weights = self.attention(self.query_embedding(query), self.key_embedding(keys),
                                          values=self.label_embedding(labels))
        return self.out(context), weights


def train_lookup(task: LookupTask = LookupTask(), projection: str | Projection = "softmax", penalty: str | None = None,
                 weight: float = 0.0, steps: int = 300, batch: int = 64, lr: float = 0.03, dim: int = 16,
                 seed: int = 0, test_size: int = 2000) -> dict[str, Any]:
    """Train a :class:`LookupModel` for ``steps`` Adam steps on fresh batches (the same initialisation and
    batches for every call with the same ``seed``), the loss being cross-entropy plus ``weight ×
    PENALTIES[penalty](α)``, and measure it on ``test_size`` new lookups.

    Returns:
        ``{"model", "losses", "accuracy", "weight on the query's token"`` (the attention's mean total weight
        on the occurrences of the query's token), ``"largest weight"`` (mean), ``"entropy"`` (mean, nats),
        ``"zeros"`` (share of exact zeros among the other keys), ``"test": (keys, labels, query, answer,
        occurs, weights)`` and ``"predicted": (test_size,)``, the predicted labels}.
    """
    if penalty is not None and penalty not in PENALTIES:
        raise ValueError(f"penalty must be None or one of {sorted(PENALTIES)}, got {penalty!r}")
    seed_everything(seed)
    model, generator = LookupModel(task, dim, projection), torch.Generator().manual_seed(seed + 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        keys, labels, query, answer, _ = task.sample(batch, generator)
        logits, weights = model(keys, labels, query)
        loss = nn.functional.cross_entropy(logits, answer)
        if penalty is not None:
            loss = loss + weight * PENALTIES[penalty](weights[:, None, :])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    keys, labels, query, answer, occurs = task.sample(test_size, torch.Generator().manual_seed(seed + 2))
    with torch.no_grad():
        logits, weights = model(keys, labels, query)
    return {"model": model, "losses": losses,
            "accuracy": (logits.argmax(-1) == answer).double().mean().item(),
            "weight on the query's token": weights.masked_fill(~occurs, 0).sum(-1).mean().item(),
            "largest weight": weights.amax(-1).mean().item(), "entropy": entropy(weights).mean().item(),
            "zeros": (weights[~occurs] == 0).double().mean().item(),
            "test": (keys, labels, query, answer, occurs, weights), "predicted": logits.argmax(-1)}


def plot_lookup_attention(trained: dict[str, dict[str, Any]], count: int = 6,
                          axes: list[Axes] | None = None) -> list[Axes]:
    """Heatmaps of the trained attention on the first ``count`` test lookups of each :func:`train_lookup`
    result in ``trained`` (titled by its key), the occurrences of the query's token outlined. Returns the axes."""
    if axes is None:
        _, axes = plt.subplots(1, len(trained), figsize=(4.2 * len(trained), 0.45 * count + 1.6),
                               layout="constrained", squeeze=False)
        axes = axes[0]
    for ax, (name, result) in zip(axes, trained.items()):
        keys, labels, query, answer, occurs, weights = result["test"]
        attention_heatmap(weights[:count], [f"k{j + 1}" for j in range(weights.shape[1])],
                          [f"lookup {i + 1}" for i in range(count)], ax=ax, colorbar=False,
                          title=f"{name}: accuracy {result['accuracy']:.2f}")
        mark_links(ax, [(j, i) for i in range(count) for j in occurs[i].nonzero().flatten().tolist()])
        ax.set_xlabel("key (outlined: the query's token)")
        ax.set_ylabel("")
    return axes
