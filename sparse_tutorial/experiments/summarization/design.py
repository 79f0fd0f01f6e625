"""The confirmatory design of chapter 11's summarization claims, fixed before its fresh seeds were trained.

The stored 5-seed grid of the ``medium`` profile (``book/results/summarization.json``: every system of Table
V with seeds 0–4, 2,000 test documents) is the **pilot**. From it alone, before any fresh seed, this module
fixes which of chapter 11's claims (:mod:`~sparse_tutorial.experiments.summarization.claims`, keyed as
there) are **primary**, **secondary** or **estimation only**, the seeds and the test: the exact Wilcoxon
signed-rank test of each claim's per-seed paired differences over the fresh seeds, Bonferroni per family,
and its Hodges–Lehmann interval (:mod:`~sparse_tutorial.stats.confirmatory`; the families, power and plan:
:mod:`~sparse_tutorial.stats.design`).

**Seeds.** Fresh seeds :data:`FRESH_SEEDS` (5 … 14, never run before this design), 10 per arm; no seeds are
added after looking. Verdicts use the fresh seeds only; the pilot's seeds are shown beside them, labelled as
the pilot. A Lead baseline has no seed and no run: its claims compare each seed of Cov+Ent (λ = 0.02) with
one number.

**Power.** The claims come in four units (ROUGE-L, nats per token, shares of trigrams and of tokens), so
each is powered for its pilot's mean difference with the upper 80 % bound of its own pilot sd (five
differences, 4 df).

**Primary** (Bonferroni over six, every power 1.00): Table V's "the pointer improves over ABS" (+20.7 ROUGE-L,
sd 1.28) and §VII-B's "on par with Lead-3", on Lead-3 and on Lead-1, the fair extractive baseline for
one-line references (+18.4 and +9.2 ROUGE-L against a margin of ±1, sd 0.79: powered to decide ✗); and the
three mechanisms Table V's rows are built on, each against the system it is added to: the entropy penalty
(λ = 0.04) lowers the attention entropy (−0.43 nats per token, sd 0.063), coverage reduces repeated
trigrams (−0.039, sd 0.015), the pointer removes ``<unk>`` on OOV-heavy documents (−0.31, sd 0.010). Each
would be decided by 3–5 seeds alone, so in one family they cost each other nothing.

**Secondary** (its own Bonferroni): "coverage improves over the pointer model" (+0.86 ROUGE-L, sd 0.78):
power 0.86 alone, 0.46 as a seventh primary claim, so it is judged in a family of its own.

**Estimation only** (effect and interval over every seed their arms have, no verdict): the claims whose
pilot effect is about 0, which no affordable number of seeds decides (judged alone at 5 %:
:data:`~sparse_tutorial.stats.design.AFFORDABLE_SEEDS` is 30): +Ent improves over the pointer at
λ = 0.01, 0.02 and 0.04 (+0.01, +0.02 and −0.09 ROUGE-L: more than 1000, more than 1000 and about 276 fresh
seeds), λ = 0.04 beats λ = 0.01 and 0.02 (−0.09, −0.11: about 126 and 249), Cov+Ent improves over Cov
(−0.05: more than 1000). Their intervals still bound the paper: at λ = 0.04 ten seeds detect 0.52 ROUGE-L,
well below the paper's +1.24.

**Runs.** The fresh seeds train every system of Table V (:data:`ARMS`): the five the primary family needs,
every seed of them first, then λ = 0.01 and 0.02 (:data:`FRESH_ESTIMATION_ARMS`, so that every row has 15
seeds): 70 runs, about 3.7 hours of one core by the pilot's mean seconds per system. The grid of the pilot
(``--profile medium --seeds 5``) trains them after its own
(:meth:`~sparse_tutorial.stats.design.Design.runs_extending`).

``python -m sparse_tutorial.stats.confirmatory summarization`` prints the design (:func:`describe`).
"""
from __future__ import annotations

from sparse_tutorial.experiments.summarization.claims import (
    ABS, COV_ENT, COVERAGE, PAR_MARGIN, POINTER, entropy_system)
from sparse_tutorial.stats.design import Arm, Design, DesignedClaim

PROFILE = "medium"
"""The profile whose grid the design extends."""
PILOT_SEEDS = tuple(range(5))
FRESH_SEEDS = tuple(range(5, 15))
"""The confirmatory seeds, 10 per arm."""

ENT_01, ENT_02, ENT_04 = (entropy_system(lam) for lam in (0.01, 0.02, 0.04))
ARMS: dict[str, Arm] = {name: Arm("system", {"name": name}, seconds) for name, seconds in (
    (ABS, 63), (POINTER, 263), (ENT_01, 141), (ENT_02, 220), (ENT_04, 262), (COVERAGE, 244), (COV_ENT, 130))}
"""Table V's systems: ``Run.of("system", profile=…, name=…, seed=…)`` of the grid, with the mean seconds of one
core their five pilot runs took."""

DESIGN: dict[str, DesignedClaim] = {
    "the pointer improves over ABS": DesignedClaim.from_pilot(
        POINTER, ABS, "greater", "primary", "ROUGE-L", (POINTER, ABS), (21.13, 19.428, 21.22, 20.44, 21.439)),
    "the best abstractive system is on par with Lead-3": DesignedClaim.from_pilot(
        COV_ENT, "Lead-3", "equivalent", "primary", "ROUGE-L", (COV_ENT,), (17.685, 18.729, 18.949, 18.098, 18.54),
        PAR_MARGIN),
    "the best abstractive system is on par with Lead-1": DesignedClaim.from_pilot(
        COV_ENT, "Lead-1", "equivalent", "primary", "ROUGE-L", (COV_ENT,), (8.5202, 9.5642, 9.784, 8.9333, 9.3746),
        PAR_MARGIN),
    "the entropy penalty (λ = 0.04) lowers the attention entropy": DesignedClaim.from_pilot(
        ENT_04, POINTER, "less", "primary", "nats/token", (ENT_04, POINTER),
        (-0.44164, -0.41945, -0.48371, -0.37227, -0.4348)),
    "coverage reduces repeated trigrams": DesignedClaim.from_pilot(
        COVERAGE, POINTER, "less", "primary", "share of trigrams", (COVERAGE, POINTER),
        (-0.026817, -0.053484, -0.033377, -0.040744, -0.038094)),
    "the pointer removes <unk> on OOV-heavy documents": DesignedClaim.from_pilot(
        POINTER, ABS, "less", "primary", "share of tokens", (POINTER, ABS),
        (-0.30561, -0.31746, -0.30756, -0.31925, -0.31856)),
    "coverage improves over the pointer model": DesignedClaim.from_pilot(
        COVERAGE, POINTER, "greater", "secondary", "ROUGE-L", (COVERAGE, POINTER),
        (1.255, 0.57224, 0.1155, 1.1268, 1.2292)),
    "+Ent (λ = 0.01) improves over the pointer model": DesignedClaim.from_pilot(
        ENT_01, POINTER, "greater", "estimation", "ROUGE-L", (ENT_01, POINTER),
        (0.056619, 0.1072, -0.017487, 0.22292, -0.33726)),
    "+Ent (λ = 0.02) improves over the pointer model": DesignedClaim.from_pilot(
        ENT_02, POINTER, "greater", "estimation", "ROUGE-L", (ENT_02, POINTER),
        (-0.039908, 0.29659, -0.28901, 0.19089, -0.073361)),
    "+Ent (λ = 0.04) improves over the pointer model": DesignedClaim.from_pilot(
        ENT_04, POINTER, "greater", "estimation", "ROUGE-L", (ENT_04, POINTER),
        (0.24638, -0.32042, -0.20922, 0.27125, -0.42902)),
    "λ = 0.04 beats λ = 0.01": DesignedClaim.from_pilot(
        ENT_04, ENT_01, "greater", "estimation", "ROUGE-L", (ENT_04, ENT_01),
        (0.18976, -0.42762, -0.19173, 0.048331, -0.091754)),
    "λ = 0.04 beats λ = 0.02": DesignedClaim.from_pilot(
        ENT_04, ENT_02, "greater", "estimation", "ROUGE-L", (ENT_04, ENT_02),
        (0.28629, -0.61701, 0.079791, 0.08036, -0.35566)),
    "Cov+Ent improves over Cov": DesignedClaim.from_pilot(
        COV_ENT, COVERAGE, "greater", "estimation", "ROUGE-L", (COV_ENT, COVERAGE),
        (-0.75138, 0.30112, 0.51225, -0.68728, 0.36686)),

}
"""The design: ``{claim: DesignedClaim}`` (keys as in ``summarization.json``), each powered for its pilot's
mean difference with the upper 80 % bound of its pilot's sd. A Lead baseline has no seed and no run: its
claims' differences are the best system's seeds minus one number."""

FRESH_ESTIMATION_ARMS = (ENT_01, ENT_02)
"""Estimation-only arms trained at the fresh seeds too (last), so that every row of Table V has 15 seeds."""

CONFIRMATORY = Design(DESIGN, PROFILE, PILOT_SEEDS, FRESH_SEEDS, FRESH_ESTIMATION_ARMS, ARMS)
"""The design as one :class:`~sparse_tutorial.stats.design.Design`."""
describe = CONFIRMATORY.describe
