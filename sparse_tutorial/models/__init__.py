"""Models of the book: :mod:`~sparse_tutorial.models.seq2seq` (chapters 9-10),
:mod:`~sparse_tutorial.models.pointer_generator` (chapter 11) and :mod:`~sparse_tutorial.models.classifier`
(chapters 12-14)."""
from sparse_tutorial.models.classifier import AttentionClassifier, ClassifierConfig, meister_config, sun_lu_config
from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig, TranslationBatch, make_batch, seq2seq_loss

__all__ = ["AttentionClassifier", "ClassifierConfig", "Seq2Seq", "Seq2SeqConfig", "TranslationBatch", "make_batch",
           "meister_config", "seq2seq_loss", "sun_lu_config"]
