"""Tokenization, the vocabulary, and per-token label counts (used by chapters 9-14).

The tokenizer is deliberately simple and fully documented, so a reader can predict every token:

* a *word* is a maximal run of letters or digits (any script), optionally joined by an apostrophe to a
  following run, so ``don't``, ``l'homme`` and ``it’s`` are one token each;
* every other non-space character (punctuation, symbols, ``_``) is a token of its own;
* with ``lowercase=True`` (the default) the text is lower-cased first (``str.lower``, so ``Ä`` becomes ``ä``).

Subword tokenization is not used: the corpora of the book are small, and whole words keep attention
heatmaps readable (each row and column is a word the reader can see).

:class:`Vocabulary` maps tokens to ids with four specials at fixed positions: ``<pad>`` = 0, ``<unk>`` = 1,
``<bos>`` = 2, ``<eos>`` = 3. :func:`label_token_counts` counts, for a labelled corpus, how often each token
occurs under each label (Sun & Lu's token polarity classes, chapter 12, are built from these counts).
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from sparse_tutorial.atomic import atomic_write_text

TOKEN_PATTERN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[^\w\s]|_")
"""A word (letters/digits, inner apostrophes allowed) or one single punctuation/symbol character."""

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)
"""The special tokens, in id order: ``<pad>`` = 0, ``<unk>`` = 1, ``<bos>`` = 2, ``<eos>`` = 3."""


def tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Split ``text`` into word and punctuation tokens (rules in the module docstring).

    >>> tokenize("Don't panic, it's only 42!")
    ["don't", 'panic', ',', "it's", 'only', '42', '!']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return TOKEN_PATTERN.findall(text.lower() if lowercase else text)


class Vocabulary:
    """A token <-> id mapping with the specials ``<pad>`` = 0, ``<unk>`` = 1, ``<bos>`` = 2, ``<eos>`` = 3.

    Build one with :meth:`build` from tokenized texts; ids of ordinary tokens follow decreasing frequency,
    ties broken alphabetically, so the same texts always give the same ids.
    """

    pad_id = 0
    unk_id = 1
    bos_id = 2
    eos_id = 3

    def __init__(self, tokens: Sequence[str]):
        """``tokens`` are the ordinary tokens in id order (ids start at ``len(SPECIALS)``)."""
        itos = list(SPECIALS) + list(tokens)
        if len(set(itos)) != len(itos):
            duplicates = sorted(t for t, n in Counter(itos).items() if n > 1)
            raise ValueError(f"tokens must be unique and must not contain the specials; duplicates: {duplicates[:5]}")
        self.itos: list[str] = itos
        self.token_to_id: dict[str, int] = {t: i for i, t in enumerate(itos)}

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_freq: int = 1,
              max_size: int | None = None) -> "Vocabulary":
        """The vocabulary of ``token_lists``: tokens seen at least ``min_freq`` times, the ``max_size`` most
        frequent ones (``max_size`` counts the 4 specials too; ``None`` = no limit)."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < len(SPECIALS):
            raise ValueError(f"max_size must be >= {len(SPECIALS)} (the specials), got {max_size}")
        counts: Counter[str] = Counter()
        for tokens in token_lists:
            if isinstance(tokens, str):
                raise TypeError("token_lists must hold lists of tokens, got a str (tokenize it first)")
            counts.update(tokens)
        for special in SPECIALS:
            counts.pop(special, None)
        ranked = sorted((t for t, n in counts.items() if n >= min_freq), key=lambda t: (-counts[t], t))
        if max_size is not None:
            ranked = ranked[: max_size - len(SPECIALS)]
        return cls(ranked)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.token_to_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.itos == other.itos

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, first={self.itos[len(SPECIALS):len(SPECIALS) + 5]})"

    def encode(self, tokens: Sequence[str], add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Ids of ``tokens`` (unknown tokens -> ``unk_id``), optionally framed by ``<bos>``/``<eos>``."""
        if isinstance(tokens, str):
            raise TypeError("tokens must be a list of tokens, got a str (tokenize it first)")
        ids = [self.token_to_id.get(t, self.unk_id) for t in tokens]
        return ([self.bos_id] if add_bos else []) + ids + ([self.eos_id] if add_eos else [])

    def decode(self, ids: Iterable[int], strip_specials: bool = True) -> list[str]:
        """Tokens of ``ids``. With ``strip_specials``, stop at the first ``<eos>`` and drop ``<pad>``/``<bos>``
        (``<unk>`` is kept: it is content the model produced)."""
        tokens = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.itos):
                raise IndexError(f"id {i} is outside the vocabulary of size {len(self.itos)}")
            if strip_specials and i == self.eos_id:
                break
            if strip_specials and i in (self.pad_id, self.bos_id):
                continue
            tokens.append(self.itos[i])
        return tokens

    def save(self, path: str | Path) -> None:
        """Write the vocabulary as JSON: ``{"specials": [...], "tokens": [...]}`` (tokens in id order), all at
        once (:func:`~sparse_tutorial.atomic.atomic_write_text`)."""
        payload = {"specials": list(SPECIALS), "tokens": self.itos[len(SPECIALS):]}
        atomic_write_text(path, json.dumps(payload, ensure_ascii=False, indent=0))

    @classmethod
    def load(cls, path: str | Path) -> "Vocabulary":
        """Read a vocabulary written by :meth:`save`."""
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
        if payload.get("specials") != list(SPECIALS):
            raise ValueError(f"{path} was saved with specials {payload.get('specials')}, expected {list(SPECIALS)}")
        return cls(payload["tokens"])


def label_token_counts(token_lists: Iterable[Sequence[str]], labels: Iterable[int],
                       num_labels: int) -> dict[str, list[int]]:
    """For a labelled corpus, ``token -> [count under label 0, count under label 1, ...]``.

    Every occurrence counts (a token twice in one text counts twice). Sun & Lu's polarity classes
    (chapter 12) compare these counts across the classes.

    Args:
        token_lists: tokenized texts.
        labels: one integer label in ``[0, num_labels)`` per text.
        num_labels: number of classes.
    """
    token_lists, labels = list(token_lists), [int(label) for label in labels]
    if len(token_lists) != len(labels):
        raise ValueError(f"token_lists ({len(token_lists)}) and labels ({len(labels)}) differ in length")
    if not token_lists:
        raise ValueError("token_lists is empty: no counts to compute")
    counts: dict[str, list[int]] = {}
    for tokens, label in zip(token_lists, labels):
        if not 0 <= label < num_labels:
            raise ValueError(f"labels must lie in [0, {num_labels}), got {label}")
        for token in tokens:
            counts.setdefault(token, [0] * num_labels)[label] += 1
    return counts
