"""The confirmatory design of chapter 14's explanation claims, fixed before its fresh seeds were trained.

The stored 5-seed grid of the ``medium`` profile (``book/results/explanation.json``: a BiLSTM with additive
attention on Rotten Tomatoes, seeds 0–4) is the **pilot**. From it alone, before any fresh seed, this module
fixes which of chapter 14's claims (:data:`~sparse_tutorial.experiments.explanation.claims.CLAIMS`, keyed as
there) are **primary**, **secondary** or **estimation only**, the seeds and the test: the exact Wilcoxon
signed-rank test of each claim's per-seed paired differences over the fresh seeds, Bonferroni per family,
and its Hodges–Lehmann interval (:mod:`~sparse_tutorial.stats.confirmatory`; the families, power and plan:
:mod:`~sparse_tutorial.stats.design`).

**Seeds.** Fresh seeds :data:`FRESH_SEEDS` (5 … 14, never run before this design), 10 per arm; no seeds are
added after looking. Verdicts use the fresh seeds only; the pilot's seeds are shown beside them, labelled as
the pilot.

**Power.** Each claim is powered for its pilot's mean difference with the upper 80 % bound of its own pilot
sd (five differences, 4 df): the claims are differences of accuracies and of shares of sentences.

**Primary** (Bonferroni over two, both powers 1.00): Wiegreffe & Pinter's "learned attention is no more
accurate than uniform attention" (−0.0055 against a margin of +0.01, sd 0.0080) and Jain & Wallace's "for
most sentences an attention far from the model's keeps its decision" (+0.45 above one half, sd 0.018): the
two claims the pilot already decided, both ✓, which 3–5 seeds decide alone.

**Secondary** (its own Bonferroni): "without an encoder, the base model's frozen attention beats uniform
attention" (W&P's Table 3; −0.019 accuracy, sd 0.027, against the paper): power 0.48 alone, 0.25 as a third
primary claim; about 20 seeds would decide it alone.

**Estimation only** (effect and interval over every seed, no verdict): the claims no affordable number of
seeds decides (judged alone at 5 %, :data:`~sparse_tutorial.stats.design.AFFORDABLE_SEEDS` is 30): the
trained adversary is as accurate (+0.003 within a margin of ±0.01, sd 0.016: about 37 fresh seeds; it is
also "not tested" wherever the adversary fails to attend unlike the base model), erasing the top-attended
token flips more decisions than erasing a random one (+0.029, sd 0.070: about 52), the base model's
attention frozen into a BiLSTM beats uniform attention (−0.006, sd 0.017: about 75). Their arms train
anyway, so they are estimated over 15 seeds.

**Runs.** Every claim comes from the grid's two runs per seed (:data:`ARMS`): 20 runs, about half an hour of
one core by the pilot's mean seconds. The grid of the pilot (``--profile medium --seeds 5``) trains them
after its own (:meth:`~sparse_tutorial.stats.design.Design.runs_extending`).

``python -m sparse_tutorial.stats.confirmatory explanation`` prints the design (:func:`describe`).
"""
from __future__ import annotations

from sparse_tutorial.stats.design import Arm, Design, DesignedClaim
from sparse_tutorial.stats.inference import ACCURACY_MARGIN

PROFILE = "medium"
"""The profile whose grid the design extends."""
PILOT_SEEDS = tuple(range(5))
FRESH_SEEDS = tuple(range(5, 15))
"""The confirmatory seeds, 10 per arm."""

BASE, UNIFORM = "base", "uniform"
ARMS: dict[str, Arm] = {BASE: Arm(BASE, {}, 132), UNIFORM: Arm(UNIFORM, {}, 44)}
"""The grid's two runs per seed, ``Run.of(kind, profile=…, seed=…)``: ``base`` trains the learned model and
every model and test that needs it, ``uniform`` the two models trained with uniform attention; with the mean
seconds of one core their five pilot runs took."""

DESIGN: dict[str, DesignedClaim] = {
    "learned attention is no more accurate than uniform attention": DesignedClaim.from_pilot(
        "learned", "uniform_trained", "not_greater", "primary", "accuracy", (BASE, UNIFORM),
        (-0.0047304, -0.0037843, -0.010407, 0.0018921, -0.010407), ACCURACY_MARGIN),
    "for most sentences an attention far from the model's keeps its decision": DesignedClaim.from_pilot(
        "far_and_kept", "half", "greater", "primary", "share of sentences", (BASE,),
        (0.44, 0.434, 0.46, 0.458, 0.454)),
    "without an encoder, the base model's frozen attention beats uniform attention": DesignedClaim.from_pilot(
        "encoder_free_frozen", "encoder_free_uniform", "greater", "secondary", "accuracy", (BASE, UNIFORM),
        (0.0018921, -0.03122, -0.027436, -0.0018921, -0.034059)),
    "a trained adversary, attending unlike the base model, is as accurate": DesignedClaim.from_pilot(
        "learned", "adversary_trained", "equivalent", "estimation", "accuracy", (BASE,),
        (0.0, 0.013245, -0.013245, 0.011353, 0.0028382), ACCURACY_MARGIN),
    "erasing the top-attended token flips more decisions than erasing a random one": DesignedClaim.from_pilot(
        "attention", "random", "greater", "estimation", "share of decisions that flip", (BASE,),
        (0.076, -0.01, -0.004, 0.08, 0.002)),
    "the base model's attention frozen into a BiLSTM beats uniform attention": DesignedClaim.from_pilot(
        "frozen_trained", "uniform_trained", "greater", "estimation", "accuracy", (BASE, UNIFORM),
        (0.0037843, 0.0047304, -0.019868, -0.0028382, -0.015137)),

}
"""The design: ``{claim: DesignedClaim}`` (keys as in ``explanation.json``; ``a`` and ``b`` name the models,
tests or shares compared, as :data:`~sparse_tutorial.experiments.explanation.claims.CLAIMS` does), each
powered for its pilot's mean difference with the upper 80 % bound of its pilot's sd."""

CONFIRMATORY = Design(DESIGN, PROFILE, PILOT_SEEDS, FRESH_SEEDS, arms=ARMS)
"""The design as one :class:`~sparse_tutorial.stats.design.Design`."""
describe = CONFIRMATORY.describe
