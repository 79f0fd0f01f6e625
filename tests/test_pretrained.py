"""sparse_tutorial.pretrained: shipped models load in one line, verified, without pickles; the shipped NMT
reproduces its stored run's translations and the pointer-generator its stored summaries."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from sparse_tutorial import pretrained
from sparse_tutorial.data.subwords import SubwordVocabulary
from sparse_tutorial.metrics import corpus_bleu
from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig
from sparse_tutorial.pretrained.models import Summarizer, Translator, read_config, save

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = [f"im anfang schuf gott die himmel und die erde {k} in the beginning god created" for k in range(40)]
SHIPPED_BYTES_LIMIT = 20_000_000


@pytest.fixture(scope="module")
def vocabulary() -> SubwordVocabulary:
    return SubwordVocabulary.train(SENTENCES, 60)


def tiny_file(folder: Path, vocabulary: SubwordVocabulary, dtype: torch.dtype = torch.float32) -> tuple[Path, Seq2Seq]:
    torch.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(src_vocab=len(vocabulary), tgt_vocab=len(vocabulary), embed_dim=8, hidden_dim=8,
                                  attention_dim=8, encoder_layers=1, decoder_layers=1, projection="sparsemax"))
    path = folder / "nmt-tiny.safetensors"
    save(path, model, {"experiment": "nmt", "system": "tiny", "sizes": {"beam_size": 2},
                       "provenance": {"run": "none"}}, dtype, vocabulary=vocabulary)
    return path, model


@pytest.fixture
def shipped_tiny(tmp_path, vocabulary, monkeypatch) -> tuple[Path, Seq2Seq]:
    """A tiny translator's file in the package's weights folder (``tmp_path/weights``), registered as shipped."""
    folder = tmp_path / "weights"
    folder.mkdir()
    path, model = tiny_file(folder, vocabulary)
    entry = pretrained.Shipped("nmt", "tiny", path.name, pretrained.sha256(path), path.stat().st_size)
    monkeypatch.setattr(pretrained, "SHIPPED", {("nmt", "tiny"): entry})
    monkeypatch.setattr(pretrained, "WEIGHTS_FOLDER", folder)
    return path, model


def test_a_loaded_translator_has_the_saved_weights_and_translates_with_its_attention(shipped_tiny):
    path, model = shipped_tiny
    translator = pretrained.load("nmt", "tiny")
    assert isinstance(translator, Translator)
    for name, value in model.state_dict().items():
        assert torch.equal(translator.model.state_dict()[name], value), name
    result = translator.translate("im anfang schuf gott die erde")
    assert result.source == translator.vocabulary.tokenize("im anfang schuf gott die erde")
    rows = len(result.output) + (len(result.output) < 2 * len(result.source) + 5)  # the </s> row, when reached
    assert result.attention.shape == (rows, len(result.source))
    torch.testing.assert_close(result.attention.sum(-1), torch.ones(rows))
    assert isinstance(result.text, str)


def test_float16_weights_load_as_float32_within_half_precision(tmp_path, vocabulary):
    path, model = tiny_file(tmp_path, vocabulary, torch.float16)
    loaded = pretrained.models.from_file(path)
    for name, value in model.state_dict().items():
        assert loaded.model.state_dict()[name].dtype == torch.float32
        torch.testing.assert_close(loaded.model.state_dict()[name], value, atol=1e-3, rtol=1e-3)


def test_the_file_is_safetensors_with_its_config_not_a_pickle(shipped_tiny):
    path, _ = shipped_tiny
    raw = path.read_bytes()
    header = int.from_bytes(raw[:8], "little")
    assert json.loads(raw[8:8 + header])["__metadata__"]["config"]  # a JSON header, then raw tensors
    assert b"\x80\x04" not in raw[:2] and not raw.startswith(b"PK")  # neither a pickle nor torch.save's zip
    assert read_config(path)["model"]["projection"] == "sparsemax"


def test_a_corrupted_file_is_refused_with_its_name(shipped_tiny):
    path, _ = shipped_tiny
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(pretrained.PretrainedError, match=r"nmt-tiny\.safetensors is corrupted.*SHA-256"):
        pretrained.load("nmt", "tiny")
    with pytest.raises(pretrained.PretrainedError, match="corrupted"):
        pretrained.load("nmt", "tiny", path=path)


def test_an_unknown_model_names_the_shipped_ones(shipped_tiny):
    with pytest.raises(pretrained.PretrainedError, match=r"no shipped model \('nmt', '\+Nothing'\).*'tiny'"):
        pretrained.load("nmt", "+Nothing")


def test_a_missing_file_names_every_way_round(shipped_tiny, tmp_path):
    path, _ = shipped_tiny
    kept = path.rename(tmp_path / "kept.safetensors")
    with pytest.raises(pretrained.PretrainedError, match=r"nmt-tiny\.safetensors is missing from .*weights .*"
                                                         r"reinstall sparse_tutorial, or pass path="):
        pretrained.load("nmt", "tiny")
    assert isinstance(pretrained.load("nmt", "tiny", path=kept), Translator)  # a copy kept elsewhere


def test_bad_text_is_refused(shipped_tiny):
    translator = pretrained.load("nmt", "tiny")
    with pytest.raises(ValueError, match="non-empty str"):
        translator.translate("   ")


# ------------------------------------------------------------------------------------ the shipped models
def test_every_shipped_model_is_in_the_repository_verified_and_the_files_stay_small():
    assert {f"{e}/{s}" for e, s in pretrained.available()} >= {
        "nmt/NMT", "nmt/+Sparsemax", "nmt/+Entropy", "nmt/+Entropy from epoch 3", "summarization/ABS+Pointer+Cov"}
    total = 0
    for (experiment, system), entry in pretrained.SHIPPED.items():
        path = pretrained.locate(experiment, system)
        assert path.parent == ROOT / "sparse_tutorial" / "pretrained" / "weights"
        config = read_config(path)
        assert (config["experiment"], config["system"]) == (experiment, system)
        assert (ROOT / config["provenance"]["run"]).is_file(), "the stored run the model reproduces"
        total += entry.bytes
    assert total <= SHIPPED_BYTES_LIMIT


@pytest.fixture(scope="module")
def medium_translation_data():
    from sparse_tutorial.experiments.nmt.data import translation_corpus
    from sparse_tutorial.experiments.nmt.training import SIZES
    return translation_corpus(SIZES["medium"].corpus)


@pytest.mark.parametrize("system", [s for e, s in pretrained.available() if e == "nmt"])
def test_a_shipped_translator_reproduces_its_translations(system, medium_translation_data):
    """The issue's bar, on the translations the model made in float32 when it was trained (its file keeps
    them): of 100 test verses ≥ 98 identical with float32 weights; with float16 weights, the corpus BLEU of
    those verses within 0.1 of the float32 translations'."""
    translator = pretrained.load("nmt", system)
    kept = translator.config["evaluation"]["outputs_float32"]
    pairs = medium_translation_data.test[:len(kept)]
    translations = [t.text for t in translator.translate_pieces([p.source for p in pairs])]
    identical = sum(a == b for a, b in zip(translations, kept))
    if translator.config["dtype"] == "float32":
        assert identical >= 98, f"{identical} of {len(kept)} translations identical to the float32 ones"
    else:
        references = [p.references for p in pairs]
        assert abs(corpus_bleu(translations, references) - corpus_bleu(kept, references)) <= 0.1, identical


def test_the_shipped_summarizer_reproduces_its_summaries():
    from sparse_tutorial.experiments import summarization
    summarizer = pretrained.load("summarization", "ABS+Pointer+Cov")
    assert isinstance(summarizer, Summarizer)
    kept = summarizer.config["evaluation"]["outputs_float32"]
    data = summarization.load_data(summarization.SIZES["medium"])
    summaries = summarizer.summarize([example.document for example in data.test[:len(kept)]])
    identical = sum(" ".join(s.tokens) == k for s, k in zip(summaries, kept))
    assert identical >= 0.95 * len(kept), f"{identical} of {len(kept)} summaries identical to the float32 ones"
