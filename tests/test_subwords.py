"""The BPE vocabulary of the translation chapters (sparse_tutorial.data.subwords)."""
import pytest

from sparse_tutorial.data import Vocabulary
from sparse_tutorial.data.subwords import SubwordVocabulary

SENTENCES = ["Und Gott sprach: Es werde Licht!", "and god said, let there be light.",
             "Mahalalel lebte fünfundsechzig Jahre", "mahalalel lived sixty-five years"] * 5


def test_training_is_deterministic_and_keeps_the_special_ids():
    first, second = SubwordVocabulary.train(SENTENCES, 60), SubwordVocabulary.train(SENTENCES, 60)
    assert first.model_proto == second.model_proto and len(first) == 60
    assert (first.pad_id, first.unk_id, first.bos_id, first.eos_id) == (Vocabulary.pad_id, Vocabulary.unk_id,
                                                                       Vocabulary.bos_id, Vocabulary.eos_id)


def test_round_trip_lower_cases_and_splits_rare_words():
    vocab = SubwordVocabulary.train(SENTENCES, 60)
    pieces = vocab.tokenize("Mahalalel sprach")
    assert vocab.detokenize(pieces) == "mahalalel sprach" and len(pieces) > 2  # a rare name falls into pieces
    ids = vocab.encode(pieces)
    assert vocab.decode(ids + [vocab.eos_id, 7]) == pieces  # decoding stops at </s>
    assert vocab.decode([vocab.bos_id, vocab.pad_id] + ids) == pieces
    assert vocab.encode(["no-such-piece"]) == [vocab.unk_id]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="size"):
        SubwordVocabulary.train(SENTENCES, 4)
    with pytest.raises(ValueError, match="non-empty"):
        SubwordVocabulary.train(["", "  "], 60)
    with pytest.raises(TypeError, match="str"):
        SubwordVocabulary.train(SENTENCES, 60).tokenize(["a", "list"])
