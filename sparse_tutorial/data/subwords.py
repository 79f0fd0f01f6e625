"""Byte-pair-encoding subwords (Sennrich et al., 2016) through ``sentencepiece``, for the translation chapters.

A word-level vocabulary of a few thousand Bible verses turns every rare name and inflection into ``<unk>``;
BPE splits them into pieces it has seen (``mahalalel`` → ``▁mah al al el``), so a small model can copy and
translate them. One joint model is learned on the German and English training sentences, so the pieces
that the two languages share (names, numbers) get one id on both sides.

:class:`SubwordVocabulary` has the interface of :class:`~sparse_tutorial.data.text.Vocabulary` that the
models use (``encode``/``decode`` of token lists, ``len``, the same special ids ``<pad>`` = 0, ``<unk>`` = 1,
``<bos>`` = 2, ``<eos>`` = 3), plus :meth:`~SubwordVocabulary.tokenize` (text → pieces) and
:meth:`~SubwordVocabulary.detokenize` (pieces → text, for BLEU). Text is lower-cased first, since the book
scores case-insensitive BLEU as Zhang et al. do.

Training is deterministic: the same sentences and size give the same pieces (one trainer thread, no
sentence sampling).
"""
from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

import sentencepiece

from sparse_tutorial.data.text import SPECIALS, Vocabulary

PIECE_START = "▁"
"""sentencepiece's mark of a piece that starts a word."""


class SubwordVocabulary:
    """A trained sentencepiece BPE model seen as a vocabulary of pieces (see the module docstring).

    Example::

        vocab = SubwordVocabulary.train(["und gott sprach", "and god said"], size=40)
        pieces = vocab.tokenize("Und Gott sprach")      # ['▁und', '▁gott', '▁sprach'] or smaller pieces
        vocab.detokenize(vocab.decode(vocab.encode(pieces)))  # 'und gott sprach'
    """

    pad_id, unk_id, bos_id, eos_id = Vocabulary.pad_id, Vocabulary.unk_id, Vocabulary.bos_id, Vocabulary.eos_id

    def __init__(self, model_proto: bytes):
        """Wrap a serialized sentencepiece model (``model_proto``, as :meth:`train` makes)."""
        self.model_proto = model_proto
        self._processor = sentencepiece.SentencePieceProcessor(model_proto=model_proto)

    @classmethod
    def train(cls, sentences: Iterable[str], size: int) -> "SubwordVocabulary":
        """Learn ``size`` BPE pieces (specials included) from ``sentences`` (lower-cased first).

        Raises:
            ValueError: if ``size`` is below 8 or no sentence is given; sentencepiece's own error when
                the sentences cannot support ``size`` pieces.
        """
        if size < 8:
            raise ValueError(f"size must be >= 8 pieces, got {size}")
        texts = [s.lower() for s in sentences if s.strip()]
        if not texts:
            raise ValueError("sentences must hold at least one non-empty sentence")
        model = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(texts), model_writer=model, vocab_size=size, model_type="bpe",
            character_coverage=1.0, num_threads=1, minloglevel=2, input_sentence_size=0,
            pad_id=cls.pad_id, unk_id=cls.unk_id, bos_id=cls.bos_id, eos_id=cls.eos_id,
            pad_piece=SPECIALS[0], unk_piece=SPECIALS[1], bos_piece=SPECIALS[2], eos_piece=SPECIALS[3])
        return cls(model.getvalue())

    def __len__(self) -> int:
        return self._processor.get_piece_size()

    def __repr__(self) -> str:
        return f"SubwordVocabulary({len(self)} pieces)"

    def tokenize(self, text: str) -> list[str]:
        """The pieces of ``text`` (lower-cased)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._processor.encode(text.lower(), out_type=str)

    def detokenize(self, pieces: Sequence[str]) -> str:
        """The text of ``pieces``: joined, ``▁`` read as a space."""
        return "".join(pieces).replace(PIECE_START, " ").strip()

    def encode(self, pieces: Sequence[str]) -> list[int]:
        """Ids of ``pieces`` (unknown pieces → ``<unk>``)."""
        return [self._processor.piece_to_id(p) for p in pieces]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Pieces of ``ids``, stopping at ``<eos>`` and leaving out ``<pad>`` and ``<bos>``."""
        pieces = []
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                pieces.append(self._processor.id_to_piece(i))
        return pieces
