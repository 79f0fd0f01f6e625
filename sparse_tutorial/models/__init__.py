"""Models of the book: :mod:`~sparse_tutorial.models.seq2seq` (chapters 8-9),
:mod:`~sparse_tutorial.models.pointer_generator` (chapter 10) and :mod:`~sparse_tutorial.models.classifier`
(chapters 11-13)."""
from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig, TranslationBatch, make_batch, seq2seq_loss

__all__ = ["Seq2Seq", "Seq2SeqConfig", "TranslationBatch", "make_batch", "seq2seq_loss"]
