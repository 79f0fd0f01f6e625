"""Zhang et al.'s claims (§VII-A, Tables I, III and IV) judged on the runs of experiment ``nmt``.

Every verdict is computed by the rule of :mod:`~sparse_tutorial.experiments.verdicts` and can come out
either way (for a "no better" claim, ✗ means a significant improvement).

Tests. BLEU differences: paired bootstrap resampling over test verses (sacrebleu, 1000 resamples) of the
outputs of all seeds pooled -- seed ``s`` of a system is paired with seed ``s`` of the other, both
fine-tuned from the same baseline -- so one p-value covers every seed. Per-seed measures of attention
(entropy per token, AER): a paired t-test over seeds (same seed = same baseline). A row that exists with one
seed only (temperatures, Gumbel, the λ sweep) is tested on that seed's verses.
"""
from __future__ import annotations

from typing import Any, Sequence

from sparse_tutorial.experiments.verdicts import SIGNIFICANCE, claim, no_better_verdict, seed_test
from sparse_tutorial.metrics import paired_bootstrap

Outputs = dict[str, list[list[str]]]
"""``{system: [outputs of seed 0, seed 1, ...]}``, each a list of detokenized test outputs."""


def bleu_test(outputs: Outputs, references: Sequence[Sequence[str]], system: str, other: str
              ) -> tuple[float, float]:
    """(BLEU of ``system`` − BLEU of ``other``, p) on the pooled verses of the seeds both have."""
    seeds = min(len(outputs[system]), len(outputs[other]))
    pooled = {name: [line for seed in range(seeds) for line in outputs[name][seed]] for name in (system, other)}
    result = paired_bootstrap(pooled[other], {system: pooled[system]}, list(references) * seeds, n_samples=1000)
    return result[system]["bleu"] - result["baseline"]["bleu"], result[system]["p_value"]


def judge(outputs: Outputs, references: Sequence[Sequence[str]], per_seed: dict[str, list[dict[str, float]]],
          sweep_outputs: dict[str, list[str]], alignment: dict[str, list[dict[str, float]]] | None
          ) -> dict[str, dict[str, Any]]:
    """Every claim that the systems in ``outputs`` allow: ``{claim: {verdict, p, difference, test, paper}}``.

    Args:
        outputs: test outputs per system and seed (:data:`Outputs`).
        references: the references of each test verse.
        per_seed: metrics per system and seed (``entropy_per_token``, ...).
        sweep_outputs: seed-0 outputs of +Entropy per λ (as a string key, e.g. ``"0.01"``).
        alignment: AER etc. per alignment system and seed, or ``None``.
    """
    bootstrap = "paired bootstrap over test verses, seeds pooled"
    claims: dict[str, dict[str, Any]] = {}

    def bleu_claim(name: str, system: str, other: str, paper: str, claimed_sign: int = 1) -> None:
        if system in outputs and other in outputs:
            claims[name] = claim(paper, *bleu_test(outputs, references, system, other), bootstrap, claimed_sign)

    entropy = {n: [m["entropy_per_token"] for m in runs] for n, runs in per_seed.items()}
    if "+Entropy" in entropy:
        claims["+Entropy lowers the entropy per token"] = claim(
            "§VII-A: lower entropy per token (Table I, last column)", *seed_test(entropy["+Entropy"], entropy["NMT"]),
            "paired t-test over seeds", claimed_sign=-1)
    bleu_claim("+Entropy beats NMT in BLEU", "+Entropy", "NMT", "Table I: +0.69 BLEU, significant")
    bleu_claim("+Coverage beats NMT", "+Coverage", "NMT", "Table I: +0.41 BLEU")
    bleu_claim("+Sparsemax gains a little over NMT", "+Sparsemax", "NMT", "Table I: +0.28 BLEU (marginal)")
    bleu_claim("+Entropy beats +L∞", "+Entropy", "+L∞", "Table I: +Entropy outperforms +L∞")
    bleu_claim("+Cov+Ent beats +Entropy", "+Cov+Ent", "+Entropy", "Table I: +1.08 vs +0.69 BLEU over NMT (best system)")
    for tau in ("0.2", "0.1"):
        bleu_claim(f"+Temp {tau} hurts BLEU", f"+Temp {tau}", "NMT", "Table I: BLEU drops sharply below τ = 0.4",
                   claimed_sign=-1)
    if "+Gumbel" in outputs:
        difference, p = bleu_test(outputs, references, "+Gumbel", "NMT")
        claims["Gumbel-softmax is no better than NMT"] = claim(
            "Table I: no better than NMT", difference, p, bootstrap + " (✗ only for a significant gain)",
            verdict_override=no_better_verdict(difference, p))
    others = {lam: out for lam, out in sweep_outputs.items() if lam != "0.01"}
    if "0.01" in sweep_outputs and others:
        scored = {lam: bleu_test({lam: [out], "0.01": [sweep_outputs["0.01"]]}, references, lam, "0.01")
                  for lam, out in others.items()}
        best = max(scored, key=lambda lam: scored[lam][0])
        difference, p = scored[best]
        claims["λ = 0.01 is the best λ"] = {
            "verdict": "✗" if difference > 0 and p < SIGNIFICANCE else ("✓" if all(
                d < 0 and q < SIGNIFICANCE for d, q in scored.values()) else "?"),
            "p": p, "difference": -difference,
            "test": f"paired bootstrap (seed 0) of λ = 0.01 against every other λ; the strongest rival is λ = {best}",
            "paper": "Table IV: λ = 0.01 best on every test set"}
    if alignment is not None and "+Entropy" in alignment:
        aer = {n: [s["aer"] for s in runs] for n, runs in alignment.items()}
        claims["+Entropy lowers AER"] = claim("Table III: lower AER and SAER than NMT", *seed_test(aer["+Entropy"], aer["NMT"]),
                                               "paired t-test over seeds", claimed_sign=-1)
    return claims
