"""The confirmatory design of chapter 12's classification claims, fixed before its fresh seeds were trained.

The stored 5-seed grid of the ``medium`` profile (``book/results/classification.json``: DP, DP-L, DP-A and AD
at the seven scales λ of Table 2 on Rotten Tomatoes, 20News I and 20News II, the models whose tokens are
analysed, seeds 0–4) is the **pilot**. From it alone, before any fresh seed, this module fixes which of
chapter 12's 59 claims (:mod:`~sparse_tutorial.experiments.classification.claims`, keyed as there) are
**primary**, **secondary** or **estimation only**, the seeds and the test: the exact Wilcoxon signed-rank
test of each claim's per-seed paired differences over the fresh seeds (an accuracy of one model minus
another's; a token class's mean score minus another's in one model), Bonferroni per family, and its
Hodges–Lehmann interval (:mod:`~sparse_tutorial.stats.confirmatory`; the families, power and plan:
:mod:`~sparse_tutorial.stats.design`).

**Seeds.** Fresh seeds :data:`FRESH_SEEDS` (5 … 14, never run before this design), 10 per arm; no seeds are
added after looking. Verdicts use the fresh seeds only; the pilot's seeds are shown beside them, labelled as
the pilot.

**Power.** The claims come in four units (accuracy, attention score, attention weight, polarity score), so
each is powered for its pilot's mean difference with the upper 80 % bound of its own pilot sd (five
differences, 4 df).

**Primary** (Bonferroni over ten, powers 0.98–1.00): Sun & Lu's headline claims, per table and figure, where
the pilot measured them clearly. Table 2: a tiny scale (0.001) hurts DP on each data set (+0.22, +0.35 and
+0.55 accuracy, sd 0.06, 0.06 and 0.15), and DP-L's LSTM shields it on 20News I (+0.26, sd 0.10). Fig. 2 and
eq. 27: on RT the class VᵀW's sign favours gets attention scores above neutral (+0.27, sd 0.05). Fig. 3b: at
λ = 100 that class's scores exceed the other's (RT, +0.076, sd 0.014). Fig. 3c: on 20News II every label's
polarity tokens score above neutral (+0.22, sd 0.06). Fig. 4: AD's negative tokens score above neutral (RT,
+0.68, sd 0.30). Fig. 5: positive and negative tokens get larger average attention weights than neutral
ones (RT, +0.0085 and +0.017, sd 0.0027 and 0.0040). At 10 seeds the exact test's critical value is the same
for any family of 7 to 12 two-sided claims, so the ten cost each other little; the paper's other variants
and data sets are the secondary family's.

**Secondary** (its own Bonferroni over twenty, powers 0.24–1.00): the other claims of the paper that 10
fresh seeds would decide judged alone (:func:`~sparse_tutorial.stats.design.seeds_needed` at most 10):
Table 2's tiny scale for DP-L, DP-A and AD on RT, for DP-A and AD on 20News I and for DP-L, DP-A and AD on
20News II; mean pooling (λ = 10⁴) does not hurt DP, DP-A and AD on RT; the LSTM shield on RT and 20News II;
§5's "λ = 1 hurts DP" on 20News I (−0.013, sd 0.0035: powered to decide ✗); the VᵀW penalty brings no gain
on RT and 20News I; term D's favoured and disfavoured classes on 20News I and the disfavoured one on RT; AD's
positive tokens on 20News I. Claims that 11–30 seeds would decide alone are left out rather than added:
a Bonferroni family of 10 seeds takes at most 25 two-sided claims (0.025/26 is below 1/1024, the exact
test's smallest p), and each claim 10 seeds cannot decide lowers every other claim's power. They are RT's
"λ = 1 hurts DP", mean pooling for DP-L, AD's positive tokens and the penalised DP's negative ones;
20News I's tiny scale for DP-L, mean pooling for AD, λ = 100, the penalised DP's positive tokens and the
positive average weights; and 20News II's "λ = 1 hurts DP". The eight polarity-score claims (positive tokens
above and negative below neutral, DP and AD, RT and 20News I) are left out too: they check the measure the
attention claims are read against, and the pilot settled seven of them (their pilot verdicts stand,
exploratory).

**Estimation only** (effect and interval over every seed their arms have, no verdict): the claims no
affordable number of seeds decides (judged alone at 5 % they need more than
:data:`~sparse_tutorial.stats.design.AFFORDABLE_SEEDS`, 30): mean pooling on 20News I for DP, DP-L and DP-A
and on 20News II for all four variants (effects within 0.003 of the −0.01 margin or around it: about 207,
46, 54 and 57, 60, 572, 232 seeds), the penalised DP's positive tokens on RT and negative ones on 20News I
(about 164 and 113), AD's negative tokens on 20News I (about 37) and DP's negative average weights on
20News I (about 515). Only the arms of the two families train at the fresh seeds: the mean-pooling arms of
the 20 Newsgroups tasks (λ = 10⁴) keep their pilot's 5.

**Runs.** The fresh seeds train the 31 models the two families compare (of the 38 of :data:`ARMS`): the 10
of the primary family, every seed of them first (about 1.4 hours of one core by the pilot's mean seconds,
mostly DP-L on 20News I), then the 21 only the secondary family needs: 310 runs, about 6.6 hours. The grid
of the pilot (``--profile medium --seeds 5``) trains them after its own
(:meth:`~sparse_tutorial.stats.design.Design.runs_extending`).

``python -m sparse_tutorial.stats.confirmatory classification`` prints the design (:func:`describe`).
"""
from __future__ import annotations

from sparse_tutorial.experiments.classification.claims import PAPER_TABLE_2
from sparse_tutorial.stats.design import Arm, Design, DesignedClaim
from sparse_tutorial.stats.inference import ACCURACY_MARGIN

PROFILE = "medium"
"""The profile whose grid the design extends."""
PILOT_SEEDS = tuple(range(5))
FRESH_SEEDS = tuple(range(5, 15))
"""The confirmatory seeds, 10 per arm."""
RT, NEWS_I, NEWS_II = "rotten_tomatoes", "newsgroups:hockey-vs-baseball", "newsgroups:motorcycles-med-guns"
FAVOURED, DISFAVOURED, NEUTRAL = "the class VᵀW's sign favours", "the other polarity class", "neutral tokens"
"""The token classes that term D's claims compare (each seed's classes taken by the sign of its own VᵀW)."""


def _name(task: str, variant: str, scale: float, vtw_weight: float = 0.0) -> str:
    """An arm's name, like ``"20News I DP-L λ=0.001"`` (``"… VᵀW penalty"`` with Sun & Lu's regularizer)."""
    return f"{PAPER_TABLE_2[task][0]} {variant} λ={scale:g}" + (" VᵀW penalty" if vtw_weight else "")


def _arm(task: str, variant: str, scale: float, vtw_weight: float = 0.0, *, seconds: float) -> tuple[str, Arm]:
    """One model of the grid, named by :func:`_name`, with the mean seconds of one core its five pilot runs took."""
    return _name(task, variant, scale, vtw_weight), Arm(
        "system", {"task": task, "variant": variant, "scale": float(scale), "vtw_weight": float(vtw_weight)}, seconds)


PILOT_SECONDS: dict[str, dict[tuple, float]] = {
    RT: {("DP", 0.001): 11, ("DP", 10): 7, ("DP", 10, 1): 8, ("DP", 100): 6, ("DP", 10000): 7, ("DP-L", 0.001): 77,
         ("DP-L", 10): 53, ("DP-A", 0.001): 79, ("DP-A", 10): 49, ("DP-A", 10000): 44, ("AD", 0.001): 106,
         ("AD", 10): 60, ("AD", 10000): 65},
    NEWS_I: {("DP", 0.001): 3, ("DP", 1): 2, ("DP", 10): 2, ("DP", 10, 1): 6, ("DP", 10000): 2,
             ("DP-L", 0.001): 226, ("DP-L", 10): 180, ("DP-L", 10000): 223, ("DP-A", 0.001): 66, ("DP-A", 10): 49,
             ("DP-A", 10000): 35, ("AD", 0.001): 84, ("AD", 10): 33},
    NEWS_II: {("DP", 0.001): 13, ("DP", 10): 8, ("DP", 10000): 8, ("DP-L", 0.001): 612, ("DP-L", 10): 307,
              ("DP-L", 10000): 219, ("DP-A", 0.001): 53, ("DP-A", 10): 36, ("DP-A", 10000): 35, ("AD", 0.001): 76,
              ("AD", 10): 36, ("AD", 10000): 45},
}
"""Per data set, the mean seconds of one core the five pilot runs of each model ``(variant, scale[, vtw_weight])``
took: the models the design's claims compare, the estimation-only claims' too."""
ARMS: dict[str, Arm] = dict(_arm(task, *model, seconds=seconds)
                            for task, models in PILOT_SECONDS.items() for model, seconds in models.items())
"""The models of :data:`PILOT_SECONDS` as runs of the ``medium`` grid (``Run.of("system", profile=…, task=…,
variant=…, scale=…, vtw_weight=…, seed=…)``, as ``classification.system_run`` builds them)."""


def _claim(task: str, name: str, a: str, b: str, kind: str, unit: str, arms: tuple[str, ...], family: str,
           differences: tuple[float, ...], margin: float | None = None) -> tuple[str, DesignedClaim]:
    """A claim on ``task``, keyed as chapter 12's claims module names it (its data set's short name first)."""
    return (f"{PAPER_TABLE_2[task][0]}: {name}",
            DesignedClaim.from_pilot(a, b, kind, family, unit, arms, differences, margin))


def _accuracy(task: str, name: str, kind: str, high: tuple, low: tuple, family: str,
              differences: tuple[float, ...], margin: float | None = None) -> tuple[str, DesignedClaim]:
    """Table 2 or §5: the accuracy of model ``high`` minus that of model ``low`` (``(variant, scale[, vtw])``)."""
    a, b = _name(task, *high), _name(task, *low)
    return _claim(task, name, a, b, kind, "accuracy", (a, b), family, differences, margin)


def _tiny_scale(task: str, variant: str, family: str, differences: tuple[float, ...]) -> tuple[str, DesignedClaim]:
    """Table 2: ``variant``'s accuracy at λ = 10 minus at λ = 0.001."""
    return _accuracy(task, f"scale 0.001 hurts {variant} (accuracy at scale 10 minus 0.001)", "greater",
                     (variant, 10), (variant, 0.001), family, differences)


def _scale_1(task: str, family: str, differences: tuple[float, ...]) -> tuple[str, DesignedClaim]:
    """§5: DP's accuracy at λ = 10 minus at λ = 1."""
    return _accuracy(task, "scale 1 hurts DP (accuracy at scale 10 minus 1)", "greater", ("DP", 10), ("DP", 1),
                     family, differences)


def _mean_pooling(task: str, variant: str, family: str, differences: tuple[float, ...]) -> tuple[str, DesignedClaim]:
    """§5: ``variant``'s accuracy at λ = 10⁴ (mean pooling) minus at λ = 10, against a margin of one point."""
    return _accuracy(task, f"mean pooling (scale 10⁴) does not hurt {variant} (accuracy at scale 10⁴ minus 10)",
                     "not_less", (variant, 10000), (variant, 10), family, differences, ACCURACY_MARGIN)


def _vtw_gain(task: str, family: str, differences: tuple[float, ...]) -> tuple[str, DesignedClaim]:
    """§5: DP's accuracy at λ = 10 with the VᵀW penalty minus without, against a margin of one point."""
    return _accuracy(task, "the VᵀW penalty brings no accuracy gain (DP at scale 10, penalised minus not)",
                     "not_greater", ("DP", 10, 1), ("DP", 10), family, differences, ACCURACY_MARGIN)


def _shield(task: str, family: str, differences: tuple[float, ...]) -> tuple[str, DesignedClaim]:
    """Table 2: DP's accuracy loss from scale 10 to 0.001 minus DP-L's (four arms)."""
    arms = tuple(_name(task, variant, scale) for variant in ("DP", "DP-L") for scale in (10, 0.001))
    return _claim(task, "the LSTM shields DP-L from scale 0.001 (DP's accuracy loss minus DP-L's)",
                  "DP's accuracy loss", "DP-L's accuracy loss", "greater", "accuracy", arms, family, differences)


def _tokens(task: str, name: str, a: str, b: str, unit: str, model: tuple, family: str,
            differences: tuple[float, ...]) -> tuple[str, DesignedClaim]:
    """Figs. 2-5 and §5: token class ``a``'s mean score above class ``b``'s in one trained ``model``."""
    return _claim(task, name, a, b, "greater", unit, (_name(task, *model),), family, differences)


DESIGN: dict[str, DesignedClaim] = dict([
    _tiny_scale(RT, "DP", "primary", (0.21854, 0.228, 0.25828, 0.15705, 0.21381)),
    _tiny_scale(NEWS_I, "DP", "primary", (0.36181, 0.36935, 0.39447, 0.31281, 0.29397)),
    _tiny_scale(NEWS_II, "DP", "primary", (0.58463, 0.61831, 0.39637, 0.62867, 0.53454)),
    _shield(NEWS_I, "primary", (0.1608, 0.2902, 0.25377, 0.24121, 0.32915)),
    _tokens(RT, "DP, scale 10: the class favoured by the sign of VᵀW: attention scores above neutral (term D)",
            FAVOURED, NEUTRAL, "attention score", ("DP", 10), "primary",
            (0.23914, 0.30572, 0.22399, 0.28825, 0.26959)),
    _tokens(RT, "DP, scale 100: the class favoured by the sign of VᵀW gets larger attention scores than the other "
                "(term D)",
            FAVOURED, DISFAVOURED, "attention score", ("DP", 100), "primary",
            (0.081335, 0.08364, 0.061953, 0.080218, 0.072052)),
    _tokens(NEWS_II, "DP, scale 10: polarity tokens of every label get larger attention scores than neutral ones",
            "polarity tokens", NEUTRAL, "attention score", ("DP", 10), "primary",
            (0.22128, 0.24145, 0.21623, 0.16749, 0.27526)),
    _tokens(RT, "DP, scale 10: positive tokens' average attention weights above neutral",
            "positive tokens", NEUTRAL, "attention weight", ("DP", 10), "primary",
            (0.006336, 0.0094082, 0.008514, 0.0073133, 0.010682)),
    _tokens(RT, "DP, scale 10: negative tokens' average attention weights above neutral",
            "negative tokens", NEUTRAL, "attention weight", ("DP", 10), "primary",
            (0.014639, 0.020392, 0.014518, 0.01826, 0.01822)),
    _tokens(RT, "AD, scale 10: negative tokens' attention scores above neutral",
            "negative tokens", NEUTRAL, "attention score", ("AD", 10), "primary",
            (0.96575, 0.44784, 0.60219, 0.72808, 0.65252)),
    _tiny_scale(RT, "DP-L", "secondary", (0.066225, 0.10407, 0.056764, 0.050142, 0.16556)),
    _tiny_scale(RT, "DP-A", "secondary", (0.1438, 0.11164, 0.13529, 0.26395, 0.21003)),
    _tiny_scale(RT, "AD", "secondary", (0.11447, 0.25828, 0.20341, 0.1561, 0.26112)),
    _mean_pooling(RT, "DP", "secondary", (0.0018921, 0.0018921, -0.0047304, 0.0, 0.0094607)),
    _mean_pooling(RT, "DP-A", "secondary", (-0.0066225, 0.0066225, 0.0028382, 0.012299, 0.0056764)),
    _mean_pooling(RT, "AD", "secondary", (0.012299, 0.0, 0.0094607, 0.0075686, 0.0056764)),
    _shield(RT, "secondary", (0.15232, 0.12394, 0.20151, 0.10691, 0.04825)),
    _vtw_gain(RT, "secondary", (-0.0018921, 0.0075686, -0.0028382, 0.0047304, 0.0)),
    _tokens(RT, "DP, scale 10: the class disfavoured by the sign of VᵀW: attention scores above neutral",
            DISFAVOURED, NEUTRAL, "attention score", ("DP", 10), "secondary",
            (0.019366, 0.052426, 0.049766, 0.023712, 0.081973)),
    _tiny_scale(NEWS_I, "DP-A", "secondary", (0.26382, 0.3103, 0.22236, 0.090452, 0.32789)),
    _tiny_scale(NEWS_I, "AD", "secondary", (0.46608, 0.23869, 0.30025, 0.21859, 0.45352)),
    _scale_1(NEWS_I, "secondary", (-0.008794, -0.013819, -0.013819, -0.013819, -0.013819)),
    _vtw_gain(NEWS_I, "secondary", (-0.0062814, -0.01005, -0.026382, 0.0, -0.0012563)),
    _tokens(NEWS_I, "DP, scale 10: the class favoured by the sign of VᵀW: attention scores above neutral (term D)",
            FAVOURED, NEUTRAL, "attention score", ("DP", 10), "secondary",
            (0.50623, 0.65289, 0.32116, 0.37633, 0.17505)),
    _tokens(NEWS_I, "DP, scale 10: the class disfavoured by the sign of VᵀW: attention scores above neutral",
            DISFAVOURED, NEUTRAL, "attention score", ("DP", 10), "secondary",
            (-0.24146, -0.35295, -0.18175, -0.15713, -0.080966)),
    _tokens(NEWS_I, "AD, scale 10: positive tokens' attention scores above neutral",
            "positive tokens", NEUTRAL, "attention score", ("AD", 10), "secondary",
            (0.92721, 0.75325, 0.45289, 0.73418, 0.38369)),
    _tiny_scale(NEWS_II, "DP-L", "secondary", (0.074266, 0.20121, 0.27288, 0.25561, 0.062176)),
    _tiny_scale(NEWS_II, "DP-A", "secondary", (0.42573, 0.55959, 0.47927, 0.38946, 0.54145)),
    _tiny_scale(NEWS_II, "AD", "secondary", (0.58722, 0.52591, 0.53022, 0.46632, 0.58549)),
    _shield(NEWS_II, "secondary", (0.51036, 0.4171, 0.12349, 0.37306, 0.47237)),
    _tokens(RT, "DP, scale 10, VᵀW penalty: positive tokens' attention scores above neutral",
            "positive tokens", NEUTRAL, "attention score", ("DP", 10, 1), "estimation",
            (0.013448, -0.020249, 0.0089871, -0.008353, -0.023089)),
    _mean_pooling(NEWS_I, "DP", "estimation", (-0.0050251, -0.0050251, -0.0075377, -0.011307, -0.015075)),
    _mean_pooling(NEWS_I, "DP-L", "estimation", (0.013819, 0.0025126, -0.013819, -0.011307, 0.099246)),
    _mean_pooling(NEWS_I, "DP-A", "estimation", (0.022613, -0.012563, 0.0025126, -0.012563, -0.008794)),
    _tokens(NEWS_I, "AD, scale 10: negative tokens' attention scores above neutral",
            "negative tokens", NEUTRAL, "attention score", ("AD", 10), "estimation",
            (0.52601, -0.12579, 0.13115, 0.19104, 1.1296)),
    _tokens(NEWS_I, "DP, scale 10, VᵀW penalty: negative tokens' attention scores above neutral",
            "negative tokens", NEUTRAL, "attention score", ("DP", 10, 1), "estimation",
            (-0.0078242, -0.007993, -0.010746, -0.0019505, 0.010403)),
    _tokens(NEWS_I, "DP, scale 10: negative tokens' average attention weights above neutral",
            "negative tokens", NEUTRAL, "attention weight", ("DP", 10), "estimation",
            (-0.00055419, -0.00098106, -0.00040962, -0.0002622, 0.0013338)),
    _mean_pooling(NEWS_II, "DP", "estimation", (-0.012953, -0.0069085, 0.00086356, 0.0, -0.012953)),
    _mean_pooling(NEWS_II, "DP-L", "estimation", (-0.007772, -0.02418, 0.043178, -0.007772, 0.01468)),
    _mean_pooling(NEWS_II, "DP-A", "estimation", (-0.012953, 0.0, -0.018135, -0.01209, 0.0)),
    _mean_pooling(NEWS_II, "AD", "estimation", (-0.017271, -0.00086356, -0.0086356, -0.01209, -0.021589)),
])
"""The design: ``{claim: DesignedClaim}`` (keys as in ``classification.json``), each powered for its pilot's
mean difference with the upper 80 % bound of its pilot's sd."""

CONFIRMATORY = Design(DESIGN, PROFILE, PILOT_SEEDS, FRESH_SEEDS, arms=ARMS)
"""The design as one :class:`~sparse_tutorial.stats.design.Design`."""
describe = CONFIRMATORY.describe
