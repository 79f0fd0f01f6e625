"""The statistics of the book's verdicts, in one place.

* :mod:`~sparse_tutorial.stats.inference`: the inference standard every results file is judged by (claims,
  the hierarchical bootstrap and the paired t over seeds, Holm's correction, the interval beside a verdict,
  the smallest detectable effect);
* :mod:`~sparse_tutorial.stats.confirmatory`: the tests of a confirmatory design (exact Wilcoxon signed-rank,
  Hodges–Lehmann intervals, Bonferroni, Clopper–Pearson, simulated power);
* :mod:`~sparse_tutorial.stats.design`: a confirmatory design as data (its claims and families, each claim's
  power and minimum detectable effect, the fresh runs it trains and their cost, judging a family);
* :mod:`~sparse_tutorial.stats.verdicts`: how a chapter shows the verdicts (tables, sentences);
* :mod:`~sparse_tutorial.stats.scorecard`: every claim of every results file in one table, with its paper
  and the chapter section that judges it;
* :mod:`~sparse_tutorial.stats.claims`: the checker of a chapter's own asserted claims, which warns, naming
  the knob a reader turned, when a claim stops holding.

Nothing here trains or runs a model; the run machinery is :mod:`sparse_tutorial.runs`.
"""
