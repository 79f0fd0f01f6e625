"""The data of the Part III experiments (chapters 12-14): a classification corpus as a :class:`Task` of
padded train/dev/test tensors with its vocabulary and per-token label counts (:func:`load_task`), the
synthetic corpus on which Sun & Lu's assumptions hold exactly (:func:`synthetic_task`), shuffled mini-batches
(:func:`batches`), the corpora the experiments use (:data:`TASKS`, :func:`cached_task`), and the
label-stratified evaluation subset of a split (:func:`evaluation_subset`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import Tensor

from sparse_tutorial.data import SPECIALS, Vocabulary, pad_sequences, tokenize
from sparse_tutorial.data import load as load_corpus
from sparse_tutorial.data.sampling import Subset, stratified_sample
from sparse_tutorial.interpret import label_classes, token_classes


class Split(NamedTuple):
    token_ids: Tensor  # (n, max_len), 0 = padding
    mask: Tensor       # (n, max_len), True = real token
    labels: Tensor     # (n,)


@dataclass
class Task:
    name: str
    train: Split
    dev: Split
    test: Split
    itos: list[str]                       # id -> token; id 0 is padding
    label_names: list[str]
    provenance: str = ""                  # where the corpus came from (one line)
    token_counts: Tensor = field(init=False)  # (vocab, num_classes): training occurrences per label

    def __post_init__(self) -> None:
        counts = torch.zeros(len(self.itos), len(self.label_names), dtype=torch.long)
        ids, mask, labels = self.train
        rows = labels.unsqueeze(-1).expand_as(ids)[mask]
        counts.index_put_((ids[mask], rows), torch.ones_like(rows), accumulate=True)
        counts[[i for i, token in enumerate(self.itos) if token in SPECIALS]] = 0   # <pad>, <unk>, ...
        self.token_counts = counts

    @property
    def num_classes(self) -> int:
        return len(self.label_names)

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def subset(self, train_size: int, seed: int = 0) -> Task:
        """The same task with ``train_size`` training examples drawn at random (counts recomputed).

        Drawn, not the first ones: corpus files are often sorted by label.
        """
        chosen = torch.randperm(len(self.train.labels), generator=torch.Generator().manual_seed(seed))[:train_size]
        train = Split(*(t[chosen] for t in self.train))
        return Task(self.name, train, self.dev, self.test, self.itos, self.label_names, self.provenance)

    def token_classes(self) -> Tensor:
        """Sun & Lu's classes: γ thresholds (binary) or the footnote-9 share rule (multi-class)."""
        if self.num_classes == 2:
            return token_classes(self.token_counts[:, 1], self.token_counts[:, 0])
        return label_classes(self.token_counts)


def load_task(name: str = "rotten_tomatoes", min_freq: int = 2, max_len: int | None = None,
              **load_kwargs: Any) -> Task:
    """A classification corpus of :mod:`sparse_tutorial.data` as padded tensors.

    Texts are tokenized with :func:`~sparse_tutorial.data.tokenize`; the vocabulary holds the training
    tokens seen at least ``min_freq`` times (rarer ones become ``<unk>``, which keeps the embedding table,
    and so each optimizer step, small); ``max_len`` truncates long documents.
    """
    corpus = load_corpus(name, verbose=False, **load_kwargs)
    texts = {split: [tokenize(example.text) for example in getattr(corpus, split)]
             for split in ("train", "dev", "test")}
    vocabulary = Vocabulary.build(texts["train"], min_freq=min_freq)

    def tensors(split: str) -> Split:
        ids, mask = pad_sequences([vocabulary.encode(tokens) for tokens in texts[split]], max_len=max_len)
        return Split(ids, mask, torch.tensor([example.label for example in getattr(corpus, split)]))

    provenance = corpus.provenance.line() if corpus.provenance is not None else name
    task_name = ":".join([name, *(str(value) for key, value in load_kwargs.items() if key == "categories")])
    return Task(task_name, tensors("train"), tensors("dev"), tensors("test"), vocabulary.itos,
                list(corpus.labels), provenance)


def synthetic_task(num_polar: int = 20, num_neutral: int = 40, length: int = 10, polar_per_doc: int = 2,
                   train_pairs: int = 500, test_pairs: int = 200, seed: int = 0) -> Task:
    """A corpus where Sun & Lu's assumptions hold exactly.

    Positive documents hold ``polar_per_doc`` positive tokens and neutral filler; every positive document has
    a negative *mirror* in which each positive token ``p_k`` is replaced by the negative token ``n_k``. So
    the data set is balanced, symmetric under flipping labels (their footnote 3), polarity tokens occur in
    one class only and neutral tokens occur equally often in both.
    """
    generator = torch.Generator().manual_seed(seed)
    itos = ["<pad>"] + [f"pos{k}" for k in range(num_polar)] + [f"neg{k}" for k in range(num_polar)] + \
           [f"neu{k}" for k in range(num_neutral)]

    def documents(pairs: int) -> Split:
        polar = torch.randint(1, num_polar + 1, (pairs, polar_per_doc), generator=generator)
        neutral = torch.randint(2 * num_polar + 1, 2 * num_polar + num_neutral + 1,
                                (pairs, length - polar_per_doc), generator=generator)
        order = torch.argsort(torch.rand(pairs, length, generator=generator), dim=-1)
        positive = torch.cat([polar, neutral], 1).gather(1, order)
        negative = torch.where(positive <= num_polar, positive + num_polar, positive)
        ids = torch.cat([positive, negative])
        return Split(ids, ids != 0, torch.cat([torch.ones(pairs), torch.zeros(pairs)]).long())

    return Task("synthetic", documents(train_pairs), documents(test_pairs // 2), documents(test_pairs),
                itos, ["negative", "positive"], f"synthetic_task(seed={seed})")


SUBSET_SEED = 0
"""The seed of every evaluation subset: the same examples for every arm and training seed of a comparison."""


def evaluation_subset(split: Split, count: int, name: str = "test") -> tuple[Split, Subset]:
    """A seeded, label-stratified random sample of ``count`` examples of ``split``
    (:func:`~sparse_tutorial.data.sampling.stratified_sample`, seed :data:`SUBSET_SEED`), trimmed to its
    longest row, with the :class:`~sparse_tutorial.data.sampling.Subset` that describes it (``name`` names
    the split in it and in a refusal).

    Raises:
        UnrepresentativeSubsetError: ``count`` is too small for the subset's label shares to match the split's.
    """
    subset = stratified_sample(split.labels.tolist(), count, seed=SUBSET_SEED, split=name)
    rows = torch.tensor(subset.indices, dtype=torch.long)
    mask = split.mask[rows]
    width = int(mask.sum(-1).max())
    return Split(split.token_ids[rows, :width], mask[:, :width], split.labels[rows]), subset


def batches(split: Split, batch_size: int, generator: torch.Generator | None = None) -> list[tuple[Tensor, ...]]:
    """Shuffled mini-batches ``(token_ids, mask, labels)``, each trimmed to its longest row."""
    order = torch.randperm(len(split.labels), generator=generator)
    out = []
    for start in range(0, len(order), batch_size):
        index = order[start:start + batch_size]
        width = int(split.mask[index].sum(-1).max().clamp(min=1))
        out.append((split.token_ids[index, :width], split.mask[index, :width], split.labels[index]))
    return out


TASKS = {
    "rotten_tomatoes": ("rotten_tomatoes", {}),
    "newsgroups:hockey-vs-baseball": ("newsgroups", {"categories": "hockey-vs-baseball", "max_len": 400}),
    "newsgroups:motorcycles-med-guns": ("newsgroups", {"categories": "motorcycles-med-guns", "max_len": 400}),
}
"""The corpora of the Part III experiments, by the name :func:`load_task` gives them: ``(corpus, its
keyword arguments)``."""


@functools.lru_cache(maxsize=None)
def cached_task(name: str, train_size: int | None = None) -> Task:
    """Task ``name`` of :data:`TASKS` with ``train_size`` training examples drawn by :meth:`Task.subset`
    when it has more (all of them when ``None``).

    Cached, so that the runs of a serial sweep load each corpus once per process (treat it as read-only).

    Raises:
        ValueError: ``name`` is not in :data:`TASKS`.
    """
    if name not in TASKS:
        raise ValueError(f"task must be one of {list(TASKS)}, got {name!r}")
    corpus, load_kwargs = TASKS[name]
    task = load_task(corpus, **load_kwargs)
    if train_size is not None and len(task.train.labels) > train_size:
        task = task.subset(train_size)
    return task
