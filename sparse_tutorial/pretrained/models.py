"""A shipped model's file and what it loads as: :class:`Translator` (experiment ``nmt``) and
:class:`Summarizer` (experiment ``summarization``).

The file is a ``safetensors`` file. Its tensors are the model's ``state_dict`` (float16 or float32) and,
for a translator, ``vocabulary.bpe`` (the sentencepiece model's bytes, uint8); its metadata holds one
entry, ``config``: JSON with ``experiment``, ``system`` (the system's name), ``dtype`` (of the stored
weights), ``model`` (the keyword
arguments of :class:`~sparse_tutorial.models.seq2seq.Seq2SeqConfig` or
:class:`~sparse_tutorial.models.pointer_generator.PointerGeneratorConfig`), ``sizes`` (the profile's, for
decoding), ``tokens`` (a summarizer's vocabulary) and ``provenance``.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple, Sequence

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from sparse_tutorial.data.subwords import SubwordVocabulary
from sparse_tutorial.data.text import SPECIALS, Vocabulary
from sparse_tutorial.experiments import summarization
from sparse_tutorial.experiments.nmt.data import Pair, TranslationData
from sparse_tutorial.experiments.nmt.training import translate
from sparse_tutorial.models.pointer_generator import PointerGenerator, PointerGeneratorConfig
from sparse_tutorial.models.seq2seq import Seq2Seq, Seq2SeqConfig


class Translation(NamedTuple):
    """One translation: its text, the source and output BPE pieces, and the attention with which each
    output piece and the final ``</s>`` were produced, ``(len(output) + 1, len(source))`` (without the
    ``</s>`` row when decoding stopped at its length limit, ``2 · len(source) + 5`` pieces)."""

    text: str
    source: list[str]
    output: list[str]
    attention: Tensor


class Translator:
    """A trained :class:`~sparse_tutorial.models.seq2seq.Seq2Seq` with its BPE vocabulary (German → English).

    Attributes:
        model: the model, in eval mode.
        config: the file's config (see the module docstring).
    """

    def __init__(self, model: Seq2Seq, vocabulary: SubwordVocabulary, config: dict[str, Any]):
        self.model = model.eval()
        self.config = config
        self._data = TranslationData([], [], [], vocabulary, vocabulary, {})

    def __repr__(self) -> str:
        return f"Translator({self.config['system']!r}, {self.config['provenance']['run']})"

    @property
    def vocabulary(self) -> SubwordVocabulary:
        """The joint German/English BPE vocabulary the model was trained with."""
        return self._data.src_vocab  # type: ignore[return-value]

    def translate(self, text: str, beam_size: int | None = None) -> Translation:
        """Translate one German ``text`` (any length; it is cut into pieces as the training verses were)
        with beam search (``beam_size``: the profile's, 4, by default)."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"text must be a non-empty str, got {text!r}")
        return self.translate_pieces([self.vocabulary.tokenize(text)], beam_size)[0]

    def translate_pieces(self, sources: Sequence[Sequence[str]], beam_size: int | None = None
                         ) -> list[Translation]:
        """Translate source BPE pieces (e.g. ``[pair.source for pair in data.test]``) in batches of 64, as
        the stored runs translated their test verses."""
        beam = beam_size if beam_size is not None else self.config["sizes"]["beam_size"]
        pairs = [Pair(list(source), [], []) for source in sources]
        outputs, attention = translate(self.model, self._data, pairs, beam_size=beam)
        return [Translation(self._data.detokenize(output), pair.source, output, weights)
                for pair, output, weights in zip(pairs, outputs, attention)]


class Summarizer:
    """A trained :class:`~sparse_tutorial.models.pointer_generator.PointerGenerator` with its vocabulary.

    Attributes:
        model: the model, in eval mode.
        vocabulary: its word vocabulary (other words of a document are copied by the pointer).
        config: the file's config (see the module docstring).
    """

    def __init__(self, model: PointerGenerator, vocabulary: Vocabulary, config: dict[str, Any]):
        self.model = model.eval()
        self.vocabulary = vocabulary
        self.config = config
        self._sizes = summarization.Sizes(**config["sizes"])

    def __repr__(self) -> str:
        return f"Summarizer({self.config['system']!r}, {self.config['provenance']['run']})"

    def summarize(self, documents: Sequence[str]) -> list[summarization.Summary]:
        """Beam-search summaries of ``documents`` (truncated to the profile's source length), each with the
        attention ``(summary_len, source_len)`` and ``p_gen`` of its tokens."""
        if isinstance(documents, str) or not all(isinstance(d, str) and d.strip() for d in documents):
            raise ValueError("documents must be a list of non-empty strings")
        examples = summarization.data.make_examples([(document, "") for document in documents], self._sizes)
        return summarization.summarize(self.model, examples, self.vocabulary, self._sizes)


def save(path: str | Path, model: nn.Module, config: dict[str, Any], dtype: torch.dtype,
         vocabulary: SubwordVocabulary | None = None) -> None:
    """Write ``model``'s weights in ``dtype`` and ``config`` (with ``model``: the model's own config) to a
    safetensors file at ``path``; a translator's ``vocabulary`` goes in as tensor ``vocabulary.bpe``."""
    tensors = {name: value.detach().to("cpu", dtype).contiguous() for name, value in model.state_dict().items()}
    if vocabulary is not None:
        tensors["vocabulary.bpe"] = torch.frombuffer(bytearray(vocabulary.model_proto), dtype=torch.uint8)
    config = {**config, "model": asdict(model.config), "dtype": str(dtype).removeprefix("torch.")}  # type: ignore[arg-type]
    save_file(tensors, str(path), metadata={"config": json.dumps(config, ensure_ascii=False, sort_keys=True)})


def read_config(path: str | Path) -> dict[str, Any]:
    """The ``config`` metadata of a shipped model's file (without reading its weights)."""
    with safe_open(str(path), framework="pt") as handle:
        return json.loads(handle.metadata()["config"])


def from_file(path: str | Path, device: str = "cpu") -> Translator | Summarizer:
    """The model in the file at ``path`` (weights cast to float32) on ``device``."""
    config = read_config(path)
    tensors = load_file(str(path))
    if config["experiment"] == "nmt":
        vocabulary = SubwordVocabulary(tensors.pop("vocabulary.bpe").numpy().tobytes())
        model: nn.Module = Seq2Seq(Seq2SeqConfig(**config["model"]))
    elif config["experiment"] == "summarization":
        model = PointerGenerator(PointerGeneratorConfig(**config["model"]))
    else:
        raise ValueError(f"{path}: unknown experiment {config['experiment']!r} in its config")
    model.load_state_dict({name: value.float() for name, value in tensors.items()})
    model.to(device)
    if config["experiment"] == "nmt":
        return Translator(model, vocabulary, config)  # type: ignore[arg-type]
    return Summarizer(model, Vocabulary(config["tokens"][len(SPECIALS):]), config)  # type: ignore[arg-type]
