"""Experiment ``summarization``: Zhang et al. (2019) §VI-B / §VII-B, Table V, explained in chapter 11.

Abstractive summarization of Debian package descriptions: the long description (a paragraph) is the
document, the one-line synopsis is the reference summary. The systems are those of Table V, all built from
:class:`~sparse_tutorial.models.pointer_generator.PointerGenerator`:

=============================  =======  ========  ===============  =================
system                         pointer  coverage  coverage weight  entropy weight λ
=============================  =======  ========  ===============  =================
ABS                            no       no        0                0
ABS+Pointer                    yes      no        0                0
ABS+Pointer+Ent (λ)            yes      no        0                0.01, 0.02, 0.04
ABS+Pointer+Cov                yes      yes       1                0
ABS+Pointer+Cov+Ent (λ=0.02)   yes      yes       1                0.02
=============================  =======  ========  ===============  =================

plus the extractive Lead-1 and Lead-3 baselines (:func:`sparse_tutorial.metrics.lead_k`).

Every trained system is decoded with beam search (beam 4) and scored with ROUGE-1/2/L F1; we also measure
what the three mechanisms are meant to change: the share of ``<unk>`` in the outputs (the pointer copies
out-of-vocabulary words instead), the share of repeated n-grams (coverage), and the attention entropy per
target token (the entropy regularizer).

``python -m sparse_tutorial.experiments summarization --profile full --seeds 3`` writes
``book/results/summarization.json``; without a GPU, ``--profile medium --workers 2`` writes the same file at a
CPU-sized scale, and the file's ``"profile"`` says which one it holds. Each trained system and seed is one
run of the sweep (:func:`grid`), so ``--workers N`` trains N at once, each on one thread by default: these
small LSTMs step through short sequences and extra threads only contend for the cores.
"""
from __future__ import annotations

import platform
import time
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple, Sequence

import torch
from torch import Tensor

from sparse_tutorial.data.text import UNK, Vocabulary
from sparse_tutorial.runs.runner import mean_std, rounded, sweep_experiment
from sparse_tutorial.experiments.summarization import design
from sparse_tutorial.experiments.summarization.claims import Runs, checks, judge
from sparse_tutorial.experiments.summarization.data import (  # noqa: F401 (part of this module's API)
    Example,
    SummarizationData,
    SummaryBatch,
    build_data,
    copyable_oovs,
    load_data,
    make_batch,
    make_batches,
    make_examples,
)
from sparse_tutorial.runs.sweep import Run
from sparse_tutorial.metrics import attention_entropy_per_token, lead_k, repeated_ngram_fraction, rouge, rouge_per_example
from sparse_tutorial.models.pointer_generator import (
    PointerGenerator,
    PointerGeneratorConfig,
    pointer_generator_loss,
)
from sparse_tutorial.profiles import default_device, seed_everything
from sparse_tutorial.training import History, LossFn, TrainConfig, epoch_generator, train


@dataclass(frozen=True)
class System:
    """One row of Table V: which parts of the pointer-generator are switched on, and the loss weights."""

    pointer: bool
    coverage: bool = False
    coverage_weight: float = 0.0  # See et al. use 1
    entropy_weight: float = 0.0  # λ of Zhang et al.'s minimum-entropy regularizer
    projection: str = "softmax"  # of the attention scores: "sparsemax" and "entmax15" give exact zeros


SYSTEMS: dict[str, System] = {
    "ABS": System(pointer=False),
    "ABS+Pointer": System(pointer=True),
    "ABS+Pointer+Ent (λ=0.01)": System(pointer=True, entropy_weight=0.01),
    "ABS+Pointer+Ent (λ=0.02)": System(pointer=True, entropy_weight=0.02),
    "ABS+Pointer+Ent (λ=0.04)": System(pointer=True, entropy_weight=0.04),
    "ABS+Pointer+Cov": System(pointer=True, coverage=True, coverage_weight=1.0),
    "ABS+Pointer+Cov+Ent (λ=0.02)": System(pointer=True, coverage=True, coverage_weight=1.0, entropy_weight=0.02),
}
"""Table V of Zhang et al. (2019), in its order (their Cov+Ent is best with λ = 0.02, Ent alone with 0.04)."""


@dataclass(frozen=True)
class Sizes:
    """Corpus slice, model and training sizes of one profile."""

    n_train: int  # training pairs (the rest of the corpus is never touched)
    n_dev: int
    n_test: int
    max_source_len: int  # tokens of the description kept (See et al. truncate articles to 400)
    max_target_len: int  # tokens of the synopsis kept, and the decoding limit
    vocab_size: int  # fixed vocabulary incl. specials; everything else is an OOV the pointer may copy
    embedding_dim: int
    hidden_dim: int
    epochs: int
    batch_size: int
    learning_rate: float
    beam_size: int
    systems: tuple[str, ...]  # which rows of SYSTEMS are trained
    headline: tuple[str, ...]  # rows run with every seed (the others with the first seed only)


SIZES: dict[str, Sizes] = {
    "quick": Sizes(n_train=2000, n_dev=150, n_test=200, max_source_len=40, max_target_len=12,
                   vocab_size=2000, embedding_dim=48, hidden_dim=64, epochs=3, batch_size=64,
                   learning_rate=4e-3, beam_size=4,
                   systems=("ABS", "ABS+Pointer", "ABS+Pointer+Cov", "ABS+Pointer+Ent (λ=0.04)"),
                   headline=()),
    "medium": Sizes(n_train=12000, n_dev=500, n_test=2000, max_source_len=40, max_target_len=12,
                    vocab_size=4000, embedding_dim=48, hidden_dim=64, epochs=4, batch_size=64,
                    learning_rate=4e-3, beam_size=4, systems=tuple(SYSTEMS), headline=tuple(SYSTEMS)),
    "full": Sizes(n_train=48700, n_dev=1000, n_test=2000, max_source_len=100, max_target_len=16,
                  vocab_size=20000, embedding_dim=128, hidden_dim=256, epochs=10, batch_size=64,
                  learning_rate=1e-3, beam_size=4, systems=tuple(SYSTEMS),
                  headline=("ABS", "ABS+Pointer", "ABS+Pointer+Cov", "ABS+Pointer+Cov+Ent (λ=0.02)")),
}
"""``quick``: about a minute of CPU time (chapter 10 runs it). ``medium``: the stored run, the CPU stand-in for
``full`` -- every system with every seed, 2,000 test documents (measured: 4 to 10 minutes of one core per
system and seed, 2.4 h of CPU for the stored run's 21 runs, 74 min on 2 workers). ``full``: the whole training split (48,700 pairs) with See et al.'s model sizes (128/256), meant for a
GPU; not yet timed."""


def build_model(system: System, sizes: Sizes, vocab: Vocabulary) -> PointerGenerator:
    """The pointer-generator configured as ``system`` at the profile's size."""
    return PointerGenerator(PointerGeneratorConfig(
        vocab_size=len(vocab), embedding_dim=sizes.embedding_dim, hidden_dim=sizes.hidden_dim,
        attention_dim=sizes.hidden_dim, pointer=system.pointer, coverage=system.coverage,
        projection=system.projection, pad_id=vocab.pad_id, unk_id=vocab.unk_id))


def batch_loss(model: PointerGenerator, batch: SummaryBatch, system: System) -> tuple[Tensor, dict[str, float]]:
    """Teacher-forced loss of one batch (see :func:`pointer_generator_loss`)."""
    output = model(batch.source, batch.source_mask, batch.target_input, batch.source_extended, batch.n_extended)
    return pointer_generator_loss(output, model.output_ids(batch.target), batch.target_mask,
                                  coverage_weight=system.coverage_weight, entropy_weight=system.entropy_weight)


def train_system(system: System, sizes: Sizes, train_examples: Sequence[Example], dev_examples: Sequence[Example],
                 vocab: Vocabulary, seed: int, device: torch.device | None = None, progress: bool = False,
                 loss_fn: LossFn | None = None) -> tuple[PointerGenerator, History]:
    """Train one system with :func:`sparse_tutorial.training.train`, keeping the epoch of lowest dev NLL.

    The batches are reshuffled every epoch (reproducibly, from ``seed``); the dev score is the negative
    per-token NLL of the references (cheap, and it is what the model optimises apart from the regularizers).
    ``loss_fn(model, batch) -> (loss, stats)`` replaces the system's :func:`batch_loss` in training (plug in
    your own regularizer; ``batch`` is a :class:`SummaryBatch`); ``system`` still builds the model.
    """
    seed_everything(seed)
    model = build_model(system, sizes, vocab)
    train_batches = make_batches(train_examples, vocab, sizes.batch_size)
    dev_batches = make_batches(dev_examples, vocab, sizes.batch_size)

    def shuffled(epoch: int) -> list[SummaryBatch]:
        return [train_batches[i] for i in torch.randperm(len(train_batches), generator=epoch_generator(seed, epoch))]

    def dev_score(model: PointerGenerator) -> float:
        device = next(model.parameters()).device
        total = tokens = 0.0
        for batch in dev_batches:
            batch = batch.to(device)
            _, stats = batch_loss(model, batch, system)
            n = float(batch.target_mask.sum())
            total, tokens = total + stats["nll"] * n, tokens + n
        return -total / tokens

    config = TrainConfig(epochs=sizes.epochs, lr=sizes.learning_rate, grad_clip=2.0, seed=seed,
                         device=device, progress=progress)
    history = train(model, shuffled, loss_fn or (lambda m, b: batch_loss(m, b, system)), config, dev_fn=dev_score)
    return model, history


class Summary(NamedTuple):
    """A decoded summary with what produced each of its tokens."""

    tokens: list[str]  # without </s>; copied OOVs are their source words
    attention: Tensor  # (len(tokens), src_len) attention when each token was produced
    p_gen: Tensor  # (len(tokens),) generation probability at each token (1 everywhere for ABS)


def ids_to_tokens(ids: Sequence[int], itos: Sequence[str], oovs: Sequence[str]) -> list[str]:
    """Extended ids -> words: ids beyond the vocabulary are this source's OOVs."""
    return [itos[i] if i < len(itos) else oovs[i - len(itos)] for i in ids]


def copied_mask(summary: Summary, source: Sequence[str], threshold: float = 0.5) -> list[bool]:
    """Which tokens were (mostly) copied: the word occurs in the source and ``1 − p_gen ≥ threshold``."""
    present = set(source)
    return [token in present and 1 - float(p) >= threshold for token, p in zip(summary.tokens, summary.p_gen)]


def highlight_copies(summary: Summary, source: Sequence[str], threshold: float = 0.5) -> str:
    """Markdown with copied tokens in bold (see :func:`copied_mask`)."""
    return " ".join(f"**{token}**" if copied else token
                    for token, copied in zip(summary.tokens, copied_mask(summary, source, threshold)))


def summarize(model: PointerGenerator, examples: Sequence[Example], vocab: Vocabulary, sizes: Sizes, block_repeated_trigrams: bool = False) -> list[Summary]:
    """Beam-search summaries of ``examples`` (in order), each with the attention and ``p_gen`` of its tokens.

    Beam search returns token ids; a teacher-forced pass over those outputs then gives, exactly, the
    attention and ``p_gen`` with which each token was produced.
    """
    device = next(model.parameters()).device
    bos, eos = vocab.bos_id, vocab.eos_id
    summaries: list[Summary] = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(examples), sizes.batch_size):
            chunk = examples[start:start + sizes.batch_size]
            batch = make_batch(chunk, vocab).to(device)
            decoded = model.generate(batch.source, batch.source_mask, bos, eos, sizes.max_target_len,
                                     batch.source_extended, batch.n_extended, beam_size=sizes.beam_size,
                                     block_repeated_trigrams=block_repeated_trigrams)
            lengths = [len(ids) for ids in decoded.tokens]
            target_input = torch.full((len(chunk), max(max(lengths), 1)), vocab.pad_id, device=device)
            target_input[:, 0] = bos
            for row, ids in enumerate(decoded.tokens):
                target_input[row, 1:len(ids)] = torch.tensor(ids[:-1], dtype=torch.long, device=device)
            output = model(batch.source, batch.source_mask, target_input, batch.source_extended, batch.n_extended)
            for row, ids in enumerate(decoded.tokens):
                src_len = int(batch.source_mask[row].sum())
                summaries.append(Summary(ids_to_tokens(ids, vocab.itos, batch.oovs[row]),
                                         output.attention[row, :len(ids), :src_len].cpu(),
                                         output.p_gen[row, :len(ids)].cpu()))
    return summaries


def reference_attention(model: PointerGenerator, examples: Sequence[Example], vocab: Vocabulary,
                        sizes: Sizes) -> list[Tensor]:
    """Per example, the teacher-forced attention ``(target_len, source_len)`` on its reference summary; its
    entropy per token is the quantity of the last column of Zhang et al.'s Table I."""
    device = next(model.parameters()).device
    weights = []
    model.eval()
    with torch.no_grad():
        for batch in make_batches(examples, vocab, sizes.batch_size):
            batch = batch.to(device)
            output = model(batch.source, batch.source_mask, batch.target_input, batch.source_extended,
                           batch.n_extended)
            weights.extend(output.attention[row][batch.target_mask[row]][:, batch.source_mask[row]].cpu()
                           for row in range(len(batch.oovs)))
    return weights


def document_measures(outputs: Sequence[Sequence[str]], attention: Sequence[Tensor], oov_heavy: set[int]
                      ) -> dict[str, list[float]]:
    """Per test document, the sums the mechanism measures divide (so intervals can resample documents):
    the reference attention's ``entropy`` over its ``tokens``, the summary's ``repeated_trigrams`` over its
    ``trigrams``, and its ``unk`` tokens over its ``output_tokens`` counted on OOV-heavy documents only
    (0 and 0 elsewhere)."""
    out: dict[str, list[float]] = {k: [] for k in ("entropy", "tokens", "repeated_trigrams", "trigrams", "unk",
                                                     "output_tokens")}
    for k, (tokens, weights) in enumerate(zip(outputs, attention)):
        logs = torch.where(weights > 0, weights.clamp_min(1e-30).log(), torch.zeros_like(weights))
        trigrams = [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]
        heavy = k in oov_heavy
        for key, value in (("entropy", float(-(weights * logs).sum())), ("tokens", weights.shape[0]),
                           ("repeated_trigrams", len(trigrams) - len(set(trigrams))), ("trigrams", len(trigrams)),
                           ("unk", tokens.count(UNK) if heavy else 0), ("output_tokens", len(tokens) if heavy else 0)):
            out[key].append(round(float(value), 5))
    return out


class Evaluation(NamedTuple):
    """What :func:`evaluate` measured on the test documents."""

    metrics: dict[str, float]
    summaries: list[Summary]
    document_rouge_l: list[float]  # (n_documents,) each summary's ROUGE-L (rougeLsum) F1 × 100
    documents: dict[str, list[float]]  # document_measures of the test documents


def evaluate(model: PointerGenerator, examples: Sequence[Example], vocab: Vocabulary, sizes: Sizes) -> Evaluation:
    """ROUGE of the beam-search summaries and the three quantities the mechanisms are meant to change.

    Returns an :class:`Evaluation`: the summaries, each document's ROUGE-L and :func:`document_measures`
    (for the claims of :mod:`~sparse_tutorial.experiments.summarization.claims`) and the metrics
    (percentages are in [0, 100]):

    * ``rouge1``, ``rouge2``, ``rougeL``, ``rougeLsum`` -- F1 against the untruncated synopses;
    * ``unk_percent`` -- share of output tokens that are ``<unk>``; ``unk_percent_oov`` -- the same on the
      *OOV-heavy* test documents, those whose synopsis contains a word outside the vocabulary that the
      document contains (a pointer can copy it, the ABS baseline cannot);
    * ``repeated_bigrams_percent``, ``repeated_trigrams_percent`` -- n-grams repeating an earlier one of
      the same summary (what coverage is meant to remove);
    * ``entropy_per_token`` -- attention entropy per reference token (teacher forcing);
    * ``copy_percent`` -- mean ``1 − p_gen`` over output tokens (0 for ABS); ``length`` -- mean tokens.
    """
    summaries = summarize(model, examples, vocab, sizes)
    outputs = [summary.tokens for summary in summaries]
    per_document = rouge_per_example([" ".join(tokens) for tokens in outputs], [ex.summary for ex in examples])
    scores = {rouge_type: sum(values) / max(len(values), 1) for rouge_type, values in per_document.items()}
    oov_heavy = [i for i, example in enumerate(examples) if copyable_oovs(example, vocab)]
    n_tokens = max(sum(len(tokens) for tokens in outputs), 1)
    attention = reference_attention(model, examples, vocab, sizes)
    metrics = {
        **scores,
        "unk_percent": 100 * sum(tokens.count(UNK) for tokens in outputs) / n_tokens,
        "unk_percent_oov": 100 * sum(outputs[i].count(UNK) for i in oov_heavy)
        / max(sum(len(outputs[i]) for i in oov_heavy), 1),
        "repeated_bigrams_percent": 100 * repeated_ngram_fraction(outputs, 2),
        "repeated_trigrams_percent": 100 * repeated_ngram_fraction(outputs, 3),
        "entropy_per_token": attention_entropy_per_token(attention),
        "copy_percent": 100 * float(sum((1 - summary.p_gen).sum() for summary in summaries)) / n_tokens,
        "length": sum(len(tokens) for tokens in outputs) / max(len(outputs), 1),
    }
    return Evaluation(metrics, summaries, per_document["rougeLsum"],
                      document_measures(outputs, attention, set(oov_heavy)))


def lead_baselines(examples: Sequence[Example]) -> dict[str, dict[str, float]]:
    """ROUGE of Lead-1 and Lead-3 (:func:`~sparse_tutorial.metrics.lead_k`) on the untruncated documents."""
    references = [example.summary for example in examples]
    return {f"Lead-{k}": rouge([lead_k(example.document, k) for example in examples], references)
            for k in (1, 3)}


def lead_document_rouge_l(examples: Sequence[Example]) -> dict[str, list[float]]:
    """Each document's ROUGE-L (rougeLsum F1 × 100) of Lead-1 and Lead-3: ``{"Lead-1": [...], "Lead-3": [...]}``."""
    references = [example.summary for example in examples]
    return {f"Lead-{k}": rouge_per_example([lead_k(example.document, k) for example in examples], references,
                                           ("rougeLsum",))["rougeLsum"] for k in (1, 3)}


class SystemRun(NamedTuple):
    """One trained system and what it produced on the test set."""

    model: PointerGenerator
    history: History
    metrics: dict[str, float]
    summaries: list[Summary]
    document_rouge_l: list[float]  # (n_test,) each test summary's ROUGE-L F1 × 100
    documents: dict[str, list[float]]  # document_measures of the test documents


def run_system(system: System, data: SummarizationData, sizes: Sizes, seed: int = 0,
               device: torch.device | None = None, progress: bool = False,
               loss_fn: LossFn | None = None) -> SystemRun:
    """Train ``system`` (e.g. ``SYSTEMS["ABS+Pointer"]``) with ``seed`` and evaluate it on ``data.test``;
    ``loss_fn`` replaces its training loss (see :func:`train_system`)."""
    if not isinstance(system, System):
        raise TypeError(f"system must be a System (e.g. SYSTEMS[name]), got {system!r}")
    model, history = train_system(system, sizes, data.train, data.dev, data.vocab, seed, device, progress, loss_fn)
    return SystemRun(model, history, *evaluate(model, data.test, data.vocab, sizes))


def _mean_std(runs: list[dict[str, float]]) -> tuple[dict[str, float], dict[str, float]]:
    """Per metric, the mean and the standard deviation over the seeds' ``runs`` (4 significant digits)."""
    stats = {key: mean_std([run[key] for run in runs]) for key in runs[0] if key not in ("seed", "best_epoch")}
    return (rounded({key: stat["mean"] for key, stat in stats.items()}),
            rounded({key: stat["std"] for key, stat in stats.items()}))


EXAMPLES = 4
"""Test documents whose summaries (by every system's seed-0 run) the results show."""


def grid(profile: str, seeds: int) -> list[Run]:
    """One run per trained system and seed: the headline systems (``Sizes.headline``) with seeds
    ``0 … seeds − 1``, the others with seed 0; then, when these are the pilot of the confirmatory design
    (:mod:`~sparse_tutorial.experiments.summarization.design`), its fresh seeds' runs. Loads the corpus
    first, so a missing one fails at once."""
    sizes = SIZES[profile]
    load_data(sizes)
    runs = [Run.of("system", profile=profile, name=name, seed=seed)
            for name in sizes.systems for seed in range(seeds if name in sizes.headline else 1)]
    return list(dict.fromkeys(runs + design.CONFIRMATORY.runs_extending(profile, seeds)))


def execute(run: Run) -> dict[str, Any]:
    """Train and evaluate system ``run["name"]`` with ``run["seed"]`` at ``run["profile"]``.

    Returns ``{"metrics": {seed, rounded metrics, best_epoch, train_and_eval_seconds}, "summaries":
    [the first EXAMPLES test summaries, copied words in bold], "document_rouge_l": [each test document's
    ROUGE-L, 4 digits], "documents": document_measures, "device", "hardware"}``.
    """
    sizes, device = SIZES[run["profile"]], default_device()
    data = load_data(sizes)
    tic = time.perf_counter()
    result = run_system(SYSTEMS[run["name"]], data, sizes, run["seed"], device)
    return {"metrics": {"seed": run["seed"], **rounded(result.metrics), "best_epoch": result.history.best_epoch,
                        "train_and_eval_seconds": round(time.perf_counter() - tic, 1)},
            "summaries": [highlight_copies(summary, example.source)
                          for summary, example in zip(result.summaries[:EXAMPLES], data.test)],
            "document_rouge_l": [round(score, 4) for score in result.document_rouge_l],
            "documents": result.documents,
            "device": str(device), "hardware": platform.processor() or platform.machine()}


def assemble(profile: str, seeds: int, runs: list[Run], results: list[dict[str, Any]]) -> dict[str, Any]:
    """The dict that ``book/results/summarization.json`` holds, from the runs of seeds ``0 … seeds − 1``: per
    system its runs, their mean and standard deviation (a metric that was NaN is ``None`` in its run and NaN
    in the mean), the Lead baselines, ``examples``: the first :data:`EXAMPLES` test documents with every
    system's seed-0 summary, and ``checks``: :func:`~sparse_tutorial.experiments.summarization.claims.checks`
    (``seeds``: the fewest seeds of any system; the mechanism of each intervention; the claims) and, for the
    design's pilot, ``design``: what the fresh seeds stored so far say
    (:meth:`~sparse_tutorial.stats.design.Design.results_section`, their claims judged by
    :func:`~sparse_tutorial.experiments.summarization.claims.judge`)."""
    sizes = SIZES[profile]
    data = load_data(sizes)
    pilot = [(run, result) for run, result in zip(runs, results) if run["seed"] < seeds]
    systems: dict[str, Any] = {}
    own_runs: dict[str, list[dict[str, Any]]] = {}
    examples = [{"document": ex.document, "reference": ex.summary, "summaries": {}} for ex in data.test[:EXAMPLES]]
    for name in sizes.systems:
        own = [result for run, result in pilot if run["name"] == name]  # seeds 0, 1, ... (grid)
        for example, summary in zip(examples, own[0]["summaries"]):
            example["summaries"][name] = summary
        own_runs[name] = own
        mean, std = _mean_std([result["metrics"] for result in own])
        systems[name] = {"system": asdict(SYSTEMS[name]), "runs": [result["metrics"] for result in own],
                         "mean": mean, "std": std}
    lead = lead_document_rouge_l(data.test)
    pilot_results = [result for _, result in pilot]
    judged = checks(own_runs, lead, len(data.test), [len(entry["runs"]) for entry in systems.values()])
    if design.CONFIRMATORY.runs_extending(profile, seeds):
        done = dict(zip(runs, results))
        judged["design"] = design.CONFIRMATORY.results_section(
            judged["claims"], done, lambda fresh: judge(_per_system(fresh, done), lead), design.__file__)
    return {"corpus": data.corpus, "sizes": asdict(sizes), "hardware": _distinct(pilot_results, "hardware"),
            "device": _distinct(pilot_results, "device"), "systems": systems,
            "lead": {name: rounded(scores) for name, scores in lead_baselines(data.test).items()},
            "examples": examples, "checks": judged}


def _per_system(runs: list[Run], done: dict[Run, dict[str, Any]]) -> Runs:
    """The results of ``runs`` per system (:data:`~sparse_tutorial.experiments.summarization.claims.Runs`),
    each system's in the order of ``runs``."""
    grouped: Runs = {}
    for run in runs:
        grouped.setdefault(run["name"], []).append(done[run])
    return grouped


def _distinct(results: list[dict[str, Any]], key: str) -> str:
    """The runs' values of ``key``, each once, in order of appearance (one value when they agree)."""
    return ", ".join(dict.fromkeys(result[key] for result in results))


def run(profile: str = "quick", seeds: int = 1) -> dict[str, Any]:
    """Every system of the profile trained and evaluated in this process, one after another (see :func:`grid`);
    the dict of :func:`assemble`."""
    return sweep_experiment("summarization", profile, seeds)
