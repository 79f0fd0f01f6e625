"""Experiment ``explanation``: is attention an explanation? (chapter 14).

The tests of Jain & Wallace (2019) and Wiegreffe & Pinter (2019), on a trained attention classifier:

* :func:`erasure` -- delete the most-attended token (or a random one, or the one with the largest gradient
  importance): how often does the decision flip?
* :func:`permutation` -- shuffle the attention weights among the real tokens: how much does the output move?
* :func:`adversarial` -- per example, the attention distribution furthest (Jensen-Shannon) from the model's
  that keeps the output within ε (Jain & Wallace §4);
* :func:`baselines` -- test accuracy of the learned model next to models trained with *uniform* attention,
  with the base model's attention *frozen* in, and a *trained adversary* whose loss rewards diverging from
  the base model's attention (Wiegreffe & Pinter §3-4; our adversary keeps the gold-label loss).

``python -m sparse_tutorial.experiments explanation --profile full --seeds 3`` writes
``book/results/explanation.json`` (``--profile medium``: the quick profile's size with several seeds, for a shared CPU).
Each seed is two runs of the sweep (:func:`grid`): the learned model with every test that needs it, and the
model trained with uniform attention; ``--workers N`` trains N at once.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch import Tensor

from sparse_tutorial.experiments.classification import (
    FitResult,
    Split,
    Task,
    accuracy,
    cached_task,
    evaluation_subset,
    fit,
    uniform_attention,
)
from sparse_tutorial.experiments.explanation import design
from sparse_tutorial.experiments.explanation.claims import checks
from sparse_tutorial.experiments.interpretability import on_device_of
from sparse_tutorial.runs.runner import sweep_experiment
from sparse_tutorial.runs.sweep import Run
from sparse_tutorial.interpret import (
    adversarial_attention,
    class_probability,
    gradient_importance,
    jensen_shannon,
    leave_one_out_logits,
)
from sparse_tutorial.models.classifier import (
    AttentionClassifier,
    ClassifierConfig,
    ClassifierOutput,
    meister_config,
    predictions,
    sun_lu_config,
)
from sparse_tutorial.profiles import training_device


@torch.no_grad()
def erasure_flips(model: AttentionClassifier, split: Split, seed: int = 0) -> dict[str, Tensor]:
    """Per example with at least two tokens, whether deleting one token flips the decision, by how that
    token is chosen: ``{"attention", "random", "gradient", "any"}``, each ``(examples,)`` bool.

    "attention": the highest attention weight; "random": a uniformly drawn real token; "gradient": the
    highest gradient importance (eq. 4); "any": some deletion flips the decision (an upper bound for every
    single-token choice). Runs on ``model``'s device.
    """
    ids, mask, _ = on_device_of(model, split)
    keep = mask.sum(-1) > 1
    ids, mask = ids[keep], mask[keep]
    output = model(ids, mask)
    original = predictions(output.logits)
    deleted = leave_one_out_logits(model, ids, mask)            # (batch, n) or (batch, n, num_classes)
    decisions = (deleted > 0).long() if model.config.num_classes == 2 else deleted.argmax(-1)
    flipped = decisions != original.unsqueeze(-1)               # (batch, n)
    with torch.enable_grad():
        grad = gradient_importance(model, ids, mask)
    generator = torch.Generator().manual_seed(seed)
    random_pick = torch.multinomial(mask.float().cpu(), 1, generator=generator).squeeze(-1).to(mask.device)
    picks = {"attention": output.weights.argmax(-1), "random": random_pick, "gradient": grad.argmax(-1)}
    flips = {name: flipped.gather(1, pick.unsqueeze(-1)).squeeze(-1) for name, pick in picks.items()}
    flips["any"] = (flipped & mask).any(-1)
    return flips


def flip_rates(flips: dict[str, Tensor]) -> dict[str, float]:
    """The share of examples whose decision flips, per way of choosing the token: the means of ``flips``."""
    return {name: flipped.float().mean().item() for name, flipped in flips.items()}


def erasure(model: AttentionClassifier, split: Split, seed: int = 0) -> dict[str, float]:
    """Share of decisions that flip when one token is deleted, by how that token is chosen: the means of
    :func:`erasure_flips`. Only examples with at least two tokens count."""
    return flip_rates(erasure_flips(model, split, seed))


@torch.no_grad()
def permutation(model: AttentionClassifier, split: Split, permutations: int = 20,
                seed: int = 0) -> dict[str, float]:
    """Jain & Wallace §4.1: permute each example's attention weights over its real tokens.

    Returns the median over examples of the median ``|Δŷ|`` across permutations (ŷ = probability of the
    original prediction), the share of permutations that flip the decision, and the same median split by
    how peaked the original attention is (max weight above / below 0.5). Runs on ``model``'s device.
    """
    ids, mask, _ = on_device_of(model, split)
    output = model(ids, mask)
    labels = predictions(output.logits)
    y_hat = class_probability(output.logits, labels)
    generator = torch.Generator().manual_seed(seed)
    changes, flips = [], []
    for _ in range(permutations):
        # Rows are right-padded, so sorting random keys (2 on padding) yields a random order of the real
        # positions followed by the padding, and gathering with it shuffles only the real weights.
        keys = torch.rand(ids.shape, generator=generator).to(ids.device).masked_fill(~mask, 2.0)
        permuted = output.weights.gather(-1, keys.argsort(-1))
        logits = model(ids, mask, attention_weights=permuted).logits
        changes.append((class_probability(logits, labels) - y_hat).abs())
        flips.append(predictions(logits) != labels)
    median_change = torch.stack(changes).median(0).values
    peaked = output.weights.max(-1).values > 0.5
    return {"median_output_change": median_change.median().item(),
            "flip_share": torch.stack(flips).float().mean().item(),
            "median_change_peaked": median_change[peaked].median().item() if peaked.any() else float("nan"),
            "median_change_flat": median_change[~peaked].median().item() if (~peaked).any() else float("nan"),
            "peaked_share": peaked.float().mean().item()}


class AdversarialOutcomes(NamedTuple):
    """Per example of an evaluation split, ``(batch,)`` each: the Jensen–Shannon divergence of the adversarial
    attention from the model's (nats, at most log 2), the change of the predicted class's probability under
    it, and whether the prediction is kept."""

    divergence: Tensor
    output_change: Tensor
    kept: Tensor


def adversarial_outcomes(model: AttentionClassifier, split: Split, epsilon: float = 0.01,
                         steps: int = 200) -> AdversarialOutcomes:
    """Jain & Wallace §4.2 on every example of ``split``: an attention as far (in JS) from the model's as an
    output change of at most ``epsilon`` allows (:func:`~sparse_tutorial.interpret.adversarial_attention`).
    Runs on ``model``'s device."""
    ids, mask, _ = on_device_of(model, split)
    with torch.no_grad():
        output = model(ids, mask)
    adversary = adversarial_attention(model, ids, mask, epsilon=epsilon, steps=steps)
    with torch.no_grad():
        labels = predictions(output.logits)
        moved = model(ids, mask, attention_weights=adversary).logits
        change = (class_probability(moved, labels) - class_probability(output.logits, labels)).abs()
    return AdversarialOutcomes(jensen_shannon(adversary, output.weights), change, predictions(moved) == labels)


def far_and_kept(outcomes: AdversarialOutcomes) -> Tensor:
    """Per example, whether an attention at least half the largest JS divergence (log 2 / 2) away from the
    model's keeps its prediction: Jain & Wallace's "a very different attention, the same decision"."""
    return (outcomes.divergence > 0.5 * math.log(2.0)) & outcomes.kept


def adversarial(model: AttentionClassifier, split: Split, epsilon: float = 0.01,
                steps: int = 200) -> dict[str, float]:
    """Jain & Wallace §4.2 summary of :func:`adversarial_outcomes`: mean JS divergence (max log 2 ≈ 0.693) of
    the adversarial attention from the model's, the share of examples above 0.5 of the maximum, the largest
    output change and the share of predictions kept."""
    return adversarial_summary(adversarial_outcomes(model, split, epsilon=epsilon, steps=steps))


def adversarial_summary(outcomes: AdversarialOutcomes) -> dict[str, float]:
    """The means and extremes of :func:`adversarial` from per-example ``outcomes``."""
    divergence, change, kept = outcomes
    return {"mean_js": divergence.mean().item(),
            "share_js_above_half_max": (divergence > 0.5 * math.log(2.0)).float().mean().item(),
            "max_output_change": change.max().item(),
            "prediction_kept_share": kept.float().mean().item()}


def frozen_attention(base: AttentionClassifier):
    """An attention source that hands out the (fixed) attention of a trained ``base`` model (on ``base``'s
    device; the weights come back on the device of ``ids``)."""
    def source(ids: Tensor, mask: Tensor) -> Tensor:
        device = next(base.parameters()).device
        with torch.no_grad():
            return base(ids.to(device), mask.to(device)).weights.to(ids.device)
    return source


def divergence_bonus(base: AttentionClassifier, weight: float):
    """Extra loss ``−weight · JS(α, α_base)``: rewards a new model for attending unlike ``base``."""
    source = frozen_attention(base)

    def extra(model: AttentionClassifier, ids: Tensor, mask: Tensor, output: ClassifierOutput) -> Tensor:
        return -weight * jensen_shannon(output.weights, source(ids, mask)).mean()
    return extra


@torch.no_grad()
def mean_divergence(model: AttentionClassifier, other: AttentionClassifier, split: Split) -> float:
    """Mean JS divergence between two models' attention on ``split``."""
    ids, mask, _ = split
    return jensen_shannon(model(ids, mask).weights, other(ids, mask).weights).mean().item()


BASELINES = ("learned", "uniform_at_test_time", "uniform_trained", "frozen_trained", "adversary_trained",
             "adversary_js_from_base", "encoder_free_uniform", "encoder_free_frozen")
"""The keys of :func:`baselines`, in its order."""


def in_baseline_order(values: dict[str, float]) -> dict[str, float]:
    """What :func:`uniform_models` and :func:`learned_baselines` measured, keyed in the order of :data:`BASELINES`."""
    return {key: values[key] for key in BASELINES}


def encoder_free_config(config: ClassifierConfig) -> ClassifierConfig:
    """Wiegreffe & Pinter's model without context (§4): ``config``'s vocabulary, classes and embedding size,
    with additive attention straight over the word embeddings and no encoder, so that a fixed weight
    multiplies one word's embedding."""
    return sun_lu_config("AD", config.vocab_size, num_classes=config.num_classes, embed_dim=config.embed_dim)


def uniform_models(config: ClassifierConfig, task: Task, seed: int, epochs: int, lr: float, optimizer: str,
                   device: str | torch.device = "cpu") -> dict[str, FitResult]:
    """The models trained (on ``device``) with uniform attention (W&P §3): ``config``'s
    (``"uniform_trained"``) and the :func:`encoder_free_config` one (``"encoder_free_uniform"``)."""
    training = dict(attention_source=uniform_attention, epochs=epochs, lr=lr, seed=seed, optimizer=optimizer,
                    device=device)
    return {"uniform_trained": fit(config, task, **training),
            "encoder_free_uniform": fit(encoder_free_config(config), task, **training)}


def baseline_models(base: AttentionClassifier, adversary_weight: float = 1.0) -> dict[str, dict[str, Any]]:
    """How each of Wiegreffe & Pinter's models differs from the learned ``base`` in training: the keyword
    arguments of :func:`fit` that replace its attention (``attention_source``) or add to its loss
    (``extra_loss``), keyed ``uniform_trained``, ``frozen_trained``, ``adversary_trained``."""
    return {"uniform_trained": {"attention_source": uniform_attention},
            "frozen_trained": {"attention_source": frozen_attention(base)},
            "adversary_trained": {"extra_loss": divergence_bonus(base, adversary_weight)}}


def base_models(config: ClassifierConfig, task: Task, base: FitResult, seed: int, epochs: int, lr: float,
                optimizer: str, adversary_weight: float = 1.0,
                device: str | torch.device = "cpu") -> dict[str, FitResult]:
    """The models that need the learned ``base``, trained on ``device``: with its attention frozen in
    (``"frozen_trained"``; and into the :func:`encoder_free_config` model, ``"encoder_free_frozen"``) and
    a trained adversary (``"adversary_trained"``, W&P §4)."""
    common = dict(epochs=epochs, lr=lr, seed=seed, optimizer=optimizer, device=device)
    models = baseline_models(base.model, adversary_weight)
    return {"frozen_trained": fit(config, task, **models["frozen_trained"], **common),
            "adversary_trained": fit(config, task, **models["adversary_trained"], **common),
            "encoder_free_frozen": fit(encoder_free_config(config), task, **models["frozen_trained"], **common)}


def learned_baselines(base: FitResult, models: dict[str, FitResult], task: Task) -> dict[str, float]:
    """The accuracies that need the learned model ``base``: its own, with uniform attention at test time, and
    those of :func:`base_models`' ``models``, with the trained adversary's divergence from it."""
    return {"learned": base.test_accuracy,
            "uniform_at_test_time": accuracy(base.model, task.test, uniform_attention),
            **{name: result.test_accuracy for name, result in models.items()},
            "adversary_js_from_base": mean_divergence(models["adversary_trained"].model, base.model, task.test)}


def baselines(config: ClassifierConfig, task: Task, base: FitResult, seed: int, epochs: int, lr: float,
              optimizer: str, adversary_weight: float = 1.0,
              device: str | torch.device = "cpu") -> dict[str, Any]:
    """Accuracies of the learned model and of the uniform / frozen / trained-adversary models (W&P), each
    trained on ``device``: :func:`uniform_models` and :func:`learned_baselines`, keyed as :data:`BASELINES`."""
    training = dict(seed=seed, epochs=epochs, lr=lr, optimizer=optimizer, device=device)
    uniform = {name: result.test_accuracy for name, result in uniform_models(config, task, **training).items()}
    models = base_models(config, task, base, adversary_weight=adversary_weight, **training)
    return in_baseline_order({**uniform, **learned_baselines(base, models, task)})


@torch.no_grad()
def correct(result: FitResult, split: Split) -> list[int]:
    """Per example of ``split``: 1 if ``result``'s model (given its fixed attention, if it was trained with
    one) classifies it correctly, else 0; their mean is :func:`accuracy`'s."""
    ids, mask, labels = split
    result.model.eval()
    weights = result.attention_source(ids, mask) if result.attention_source is not None else None
    return (predictions(result.model(ids, mask, attention_weights=weights).logits) == labels).int().tolist()


@dataclass(frozen=True)
class Sizes:
    """Data, model and training sizes of one profile of :data:`SIZES`.

    Attributes:
        n_train: training sentences (``None``: all); the model of the epoch best on dev is kept.
        epochs: the most epochs.
        embedding_dim, hidden_dim: the BiLSTM.
        n_test: test sentences of erasure, permutation and the adversaries, a label-stratified sample of the
            test set (:func:`~sparse_tutorial.experiments.classification.evaluation_subset`); accuracies use
            the whole test set.
        note: the profile in a sentence, written into the results as ``"profile_note"``.
    """

    n_train: int | None
    epochs: int
    embedding_dim: int
    hidden_dim: int
    n_test: int
    note: str


SIZES: dict[str, Sizes] = {
    "quick": Sizes(n_train=4000, epochs=3, embedding_dim=32, hidden_dim=32, n_test=300,
                   note="quick profile: 4,000 training sentences, 3 epochs, 32-dimensional BiLSTM"),
    "medium": Sizes(n_train=None, epochs=4, embedding_dim=32, hidden_dim=32, n_test=500,
                    note="medium profile (shared 2-core CPU): all 8,454 training sentences, 4 epochs (best on dev), "
                         "32-dimensional BiLSTM, erasure, permutation and adversarial attention on 500 test "
                         "sentences, accuracies on the whole test set"),
    "full": Sizes(n_train=None, epochs=8, embedding_dim=64, hidden_dim=64, n_test=1000,
                  note="full profile: 64-dimensional BiLSTM, 8 epochs, tests on 1,000 test sentences"),
}
"""The sizes of each profile of :data:`~sparse_tutorial.profiles.PROFILES`."""


LR, OPTIMIZER = 1e-3, "adam"
"""Meister et al.'s training of every model of this experiment."""


def training_task(train: int | None) -> Task:
    """The rotten_tomatoes task, its training split cut to ``train`` sentences (``None``: all of it), loaded
    once per process (:func:`~sparse_tutorial.experiments.classification.cached_task`)."""
    return cached_task("rotten_tomatoes", train)


def grid(profile: str, seeds: int) -> list[Run]:
    """Per seed, the learned model with every test and model that needs it (``"base"``) and the models
    trained with uniform attention (``"uniform"``); then, when these are the pilot of the confirmatory design
    (:mod:`~sparse_tutorial.experiments.explanation.design`), the same two runs at its fresh seeds. Loads
    the corpus first, so a missing one fails at once."""
    training_task(SIZES[profile].n_train)
    return ([Run.of(kind, profile=profile, seed=seed) for seed in range(seeds) for kind in ("base", "uniform")]
            + design.CONFIRMATORY.runs_extending(profile, seeds))


def execute(run: Run) -> dict[str, Any]:
    """One run of :func:`grid` at ``run["profile"]`` with ``run["seed"]``.

    Returns for ``"base"``: ``{"erasure", "permutation", "adversarial", "baselines", "correct",
    "erasure_flips", "far_and_kept"}`` (dicts of :func:`erasure`, :func:`permutation`, :func:`adversarial`
    and :func:`learned_baselines`; per model, :func:`correct` on the whole test set; per way of choosing the
    token, :func:`erasure_flips` as 0/1; :func:`far_and_kept` as 0/1); for ``"uniform"``: ``{"baselines", "correct"}`` of
    :func:`uniform_models`. The per-example lists stay in the run's file; :func:`assemble` reduces them.

    Raises:
        ValueError: if ``run.kind`` is neither.
    """
    sizes, seed = SIZES[run["profile"]], run["seed"]
    task = training_task(sizes.n_train)
    config = meister_config("bilstm", task.vocab_size, embed_dim=sizes.embedding_dim, hidden_dim=sizes.hidden_dim)
    training = dict(seed=seed, epochs=sizes.epochs, lr=LR, optimizer=OPTIMIZER,
                    device=training_device(run["profile"]))
    if run.kind == "uniform":
        models = uniform_models(config, task, **training)
        return {"baselines": {name: result.test_accuracy for name, result in models.items()},
                "correct": {name: correct(result, task.test) for name, result in models.items()}}
    if run.kind != "base":
        raise ValueError(f"run.kind must be 'base' or 'uniform', got {run.kind!r}")
    base = fit(config, task, **training)
    models = base_models(config, task, base, **training)
    accuracies = {"baselines": learned_baselines(base, models, task),
                  "correct": {name: correct(result, task.test) for name, result in {"learned": base, **models}.items()}}
    analysed = base.model.to(training["device"])   # the analyses run where the models trained
    evaluation, subset = evaluation_subset(task.test, sizes.n_test, name=f"{task.name} test")
    flips = erasure_flips(analysed, evaluation, seed=seed)
    outcomes = adversarial_outcomes(analysed, evaluation)
    return {"evaluation_subset": subset.record(), "erasure": flip_rates(flips),
            "permutation": permutation(analysed, evaluation, seed=seed),
            "adversarial": adversarial_summary(outcomes),
            **accuracies,
            "erasure_flips": {name: flipped.int().tolist() for name, flipped in flips.items()},
            "far_and_kept": far_and_kept(outcomes).int().tolist()}


def assemble(profile: str, seeds: int, runs: list[Run], results: list[dict[str, Any]]) -> dict[str, Any]:
    """The dict that ``book/results/explanation.json`` holds: ``profile_note``, ``corpus``; for each of
    ``erasure``, ``permutation``, ``adversarial`` and ``baselines``, one row per seed ``0 … seeds − 1``
    (``{"seed", ...}``; a median :func:`permutation` could not take is ``None``); and ``checks``, the verdicts
    of :func:`~sparse_tutorial.experiments.explanation.claims.checks` on the per-example results of those
    seeds and, for the design's pilot, ``design``: what the fresh seeds stored so far say
    (:meth:`~sparse_tutorial.stats.design.Design.section`)."""
    by_run = dict(zip(runs, results))
    rows: dict[str, list[dict[str, Any]]] = {"erasure": [], "permutation": [], "adversarial": [], "baselines": []}
    correct_by_model: dict[str, dict[int, list[int]]] = {}
    flips_by_pick: dict[str, dict[int, list[int]]] = {}
    kept_far: dict[int, list[int]] = {}
    trained = sorted({run["seed"] for run in by_run if Run.of("base", profile=profile, seed=run["seed"]) in by_run
                      and Run.of("uniform", profile=profile, seed=run["seed"]) in by_run})
    for seed in trained:
        base = by_run[Run.of("base", profile=profile, seed=seed)]
        uniform = by_run[Run.of("uniform", profile=profile, seed=seed)]
        if seed < seeds:
            for test in ("erasure", "permutation", "adversarial"):
                rows[test].append({"seed": seed, **base[test]})
            rows["baselines"].append({"seed": seed,
                                      **in_baseline_order({**base["baselines"], **uniform["baselines"]})})
        for name, values in {**base["correct"], **uniform["correct"]}.items():
            correct_by_model.setdefault(name, {})[seed] = values
        for name, values in base["erasure_flips"].items():
            flips_by_pick.setdefault(name, {})[seed] = values
        kept_far[seed] = base["far_and_kept"]
    adversary_js = {seed: by_run[Run.of("base", profile=profile, seed=seed)]["baselines"]["adversary_js_from_base"]
                    for seed in trained}
    subsets = {json.dumps(by_run[Run.of("base", profile=profile, seed=seed)]["evaluation_subset"], sort_keys=True)
               for seed in trained}
    if len(subsets) != 1:
        raise ValueError(f"the seeds of explanation were evaluated on {len(subsets)} different subsets; every "
                         "seed must see the same test sentences")

    def checks_at(chosen: list[int]) -> dict[str, Any]:
        return checks({name: [values[s] for s in chosen] for name, values in correct_by_model.items()},
                      {name: [values[s] for s in chosen] for name, values in flips_by_pick.items()},
                      [adversary_js[s] for s in chosen], [kept_far[s] for s in chosen])

    pilot = list(range(seeds))
    results = {"profile_note": SIZES[profile].note, "corpus": training_task(SIZES[profile].n_train).provenance,
               "evaluation_subset": json.loads(subsets.pop()), **rows, "checks": checks_at(pilot)}
    if design.CONFIRMATORY.runs_extending(profile, seeds):
        results["checks"]["design"] = design.CONFIRMATORY.results_section(
            results["checks"]["claims"], by_run, lambda fresh: checks_at(sorted({run["seed"] for run in fresh}))["claims"],
            design.__file__)
    return results


def run(profile: str, seeds: int) -> dict[str, Any]:
    """Chapter 14's tests for a BiLSTM with additive softmax attention, once per seed, in this process (see
    :func:`grid`); the dict of :func:`assemble`."""
    return sweep_experiment("explanation", profile, seeds)
