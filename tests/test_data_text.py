"""Tests of sparse_tutorial.data.text: tokenizer, Vocabulary, per-token label counts."""
import pytest

from sparse_tutorial.data.text import SPECIALS, Vocabulary, label_token_counts, tokenize


def test_tokenize_splits_punctuation_and_keeps_inner_apostrophes():
    assert tokenize("Don't panic, it’s only 42!") == ["don't", "panic", ",", "it’s", "only", "42", "!"]
    assert tokenize("Ein ''Über''-Film (2002)...") == ["ein", "'", "'", "über", "'", "'", "-", "film", "(",
                                                       "2002", ")", ".", ".", "."]


def test_tokenize_lowercase_option():
    assert tokenize("Das Haus", lowercase=False) == ["Das", "Haus"]
    assert tokenize("Das Haus") == ["das", "haus"]
    assert tokenize("   ") == []


def test_tokenize_rejects_non_strings():
    with pytest.raises(TypeError, match="text"):
        tokenize(["a", "list"])


def test_vocabulary_specials_and_frequency_order():
    vocab = Vocabulary.build([["b", "a", "b"], ["c", "b", "a"]])
    assert vocab.itos[:4] == list(SPECIALS) == ["<pad>", "<unk>", "<bos>", "<eos>"]
    assert (vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id) == (0, 1, 2, 3)
    assert vocab.itos[4:] == ["b", "a", "c"]  # by count, ties alphabetical
    assert len(vocab) == 7 and "a" in vocab and "z" not in vocab


def test_vocabulary_min_freq_and_max_size():
    texts = [["x"] * 5 + ["y"] * 3 + ["z"]]
    assert Vocabulary.build(texts, min_freq=2).itos[4:] == ["x", "y"]
    assert Vocabulary.build(texts, max_size=5).itos[4:] == ["x"]
    with pytest.raises(ValueError, match="max_size"):
        Vocabulary.build(texts, max_size=3)
    with pytest.raises(ValueError, match="min_freq"):
        Vocabulary.build(texts, min_freq=0)
    with pytest.raises(TypeError, match="token_lists"):
        Vocabulary.build(["not tokenized"])


def test_encode_decode_round_trip_and_unknowns():
    vocab = Vocabulary.build([tokenize("the cat sat on the mat .")])
    tokens = tokenize("The cat sat on the mat.")
    ids = vocab.encode(tokens, add_bos=True, add_eos=True)
    assert ids[0] == vocab.bos_id and ids[-1] == vocab.eos_id
    assert vocab.decode(ids) == tokens
    assert vocab.decode(ids + [vocab.pad_id, vocab.pad_id]) == tokens
    assert vocab.decode(ids, strip_specials=False)[0] == "<bos>"
    assert vocab.encode(["dog"]) == [vocab.unk_id]
    assert vocab.decode(vocab.encode(["dog", "sat"])) == ["<unk>", "sat"]
    with pytest.raises(IndexError, match="outside"):
        vocab.decode([len(vocab)])


def test_vocabulary_save_load_round_trip(tmp_path):
    vocab = Vocabulary.build([tokenize("Grüße aus Köln, sagte er.")])
    vocab.save(tmp_path / "vocab.json")
    loaded = Vocabulary.load(tmp_path / "vocab.json")
    assert loaded == vocab and loaded.token_to_id == vocab.token_to_id


def test_vocabulary_rejects_duplicates():
    with pytest.raises(ValueError, match="unique"):
        Vocabulary(["a", "a"])
    with pytest.raises(ValueError, match="unique"):
        Vocabulary(["<pad>"])


def test_label_token_counts():
    counts = label_token_counts([["good", "film"], ["bad", "film", "film"], ["good"]], [1, 0, 1], num_labels=2)
    assert counts == {"good": [0, 2], "film": [2, 1], "bad": [1, 0]}
    with pytest.raises(ValueError, match="labels must lie"):
        label_token_counts([["a"]], [2], num_labels=2)
    with pytest.raises(ValueError, match="differ in length"):
        label_token_counts([["a"]], [0, 1], num_labels=2)
    with pytest.raises(ValueError, match="empty"):
        label_token_counts([], [], num_labels=2)
