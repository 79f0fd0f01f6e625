"""Padding, boolean masks and length-bucketed batches (used by the training chapters 9-14).

Sequences of ids of different lengths become one ``(batch, max_len)`` ``LongTensor`` padded with
``pad_id`` plus a boolean mask of the same shape, **True = keep** (a real token), the one mask polarity of
the whole library: attention modules take it as their ``mask`` argument.

Length bucketing groups sequences of similar length into the same batch, so little compute is spent on
padding: indices are shuffled with a seeded generator (ties between equal lengths are broken randomly),
stably sorted by length, cut into batches, and the order of the batches is shuffled with the same seed.
The same seed always gives the same batches.
"""
from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields

import torch
from torch import Tensor


def pad_sequences(sequences: Sequence[Sequence[int]], pad_id: int = 0,
                  max_len: int | None = None) -> tuple[Tensor, Tensor]:
    """Pad id sequences to a rectangle.

    Args:
        sequences: ``batch`` lists of token ids (each may have its own length; empty ones are allowed).
        pad_id: id written into the padding positions.
        max_len: truncate longer sequences to this length (``None`` = the longest sequence's length).

    Returns:
        ``(ids, mask)``: ``ids: (batch, max_len)`` ``torch.long``; ``mask: (batch, max_len)`` ``torch.bool``,
        True where ``ids`` holds a real token, False on padding.
    """
    if len(sequences) == 0:
        raise ValueError("sequences is empty: nothing to pad")
    if max_len is not None and max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    lengths = [len(s) if max_len is None else min(len(s), max_len) for s in sequences]
    width = max(max(lengths), 1)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.bool)
    for row, (sequence, length) in enumerate(zip(sequences, lengths)):
        if length:
            ids[row, :length] = torch.as_tensor(list(sequence[:length]), dtype=torch.long)
            mask[row, :length] = True
    return ids, mask


@dataclass
class Batch:
    """One padded batch; shapes use ``batch`` rows, ``src_len``/``tgt_len`` padded columns.

    Attributes:
        indices: positions of the batch's examples in the list they came from (to recover the texts).
        source: ``(batch, src_len)`` ids; ``source_mask``: ``(batch, src_len)`` bool, True = real token.
        target: ``(batch, tgt_len)`` ids or ``None`` (classification); ``target_mask`` likewise.
        labels: ``(batch,)`` class ids, ``(batch, n_labels)`` multi-hot, or ``None``.
    """

    indices: list[int]
    source: Tensor
    source_mask: Tensor
    target: Tensor | None = None
    target_mask: Tensor | None = None
    labels: Tensor | None = None

    @property
    def size(self) -> int:
        """Number of examples in the batch."""
        return len(self.indices)

    @property
    def source_lengths(self) -> Tensor:
        """``(batch,)`` number of real source tokens per row."""
        return self.source_mask.sum(dim=1)

    def to(self, device: torch.device | str) -> "Batch":
        """A copy with every tensor moved to ``device``."""
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in moved.items():
            if isinstance(value, Tensor):
                moved[name] = value.to(device)
        return Batch(**moved)


def bucket_batches(lengths: Sequence[int], batch_size: int, seed: int | None = 0,
                   drop_last: bool = False) -> list[list[int]]:
    """Group indices ``0..len(lengths)-1`` into batches of similar length (rules in the module docstring).

    Args:
        lengths: length of each example (e.g. source tokens).
        batch_size: examples per batch (the last batch may be smaller unless ``drop_last``).
        seed: seeds the tie-breaking and the batch order; ``None`` = no shuffling at all (batches in
            increasing length, ties by index), e.g. for evaluation.
        drop_last: drop a final batch smaller than ``batch_size``.

    Returns:
        A list of batches, each a list of indices; every index appears at most once.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = list(range(len(lengths)))
    rng = random.Random(seed) if seed is not None else None
    if rng is not None:
        rng.shuffle(order)
    order.sort(key=lambda i: lengths[i])
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if drop_last and batches and len(batches[-1]) < batch_size:
        batches.pop()
    if rng is not None:
        rng.shuffle(batches)
    return batches


def iterate_batches(sources: Sequence[Sequence[int]], batch_size: int,
                    targets: Sequence[Sequence[int]] | None = None,
                    labels: Sequence[int] | Sequence[Sequence[int]] | Tensor | None = None,
                    pad_id: int = 0, seed: int | None = 0, max_source_len: int | None = None,
                    max_target_len: int | None = None) -> Iterator[Batch]:
    """Length-bucketed :class:`Batch` es over encoded examples (bucketed by source length).

    Args:
        sources: encoded source sequences (lists of ids).
        batch_size: examples per batch.
        targets: encoded target sequences, one per source, or ``None``.
        labels: one class id (or one multi-hot row) per source, or ``None``.
        pad_id: padding id (``Vocabulary.pad_id`` = 0).
        seed: see :func:`bucket_batches`; pass a different seed each epoch for a new order.
        max_source_len, max_target_len: truncate longer sequences.
    """
    if targets is not None and len(targets) != len(sources):
        raise ValueError(f"targets ({len(targets)}) and sources ({len(sources)}) differ in length")
    if labels is not None and len(labels) != len(sources):
        raise ValueError(f"labels ({len(labels)}) and sources ({len(sources)}) differ in length")
    label_tensor = None if labels is None else torch.as_tensor(labels)
    for indices in bucket_batches([len(s) for s in sources], batch_size, seed):
        source, source_mask = pad_sequences([sources[i] for i in indices], pad_id, max_source_len)
        target = target_mask = None
        if targets is not None:
            target, target_mask = pad_sequences([targets[i] for i in indices], pad_id, max_target_len)
        batch_labels = None if label_tensor is None else label_tensor[torch.as_tensor(indices)]
        yield Batch(indices, source, source_mask, target, target_mask, batch_labels)
