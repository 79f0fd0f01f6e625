"""The machinery that trains, stores and reuses the runs of the book's experiments.

* :mod:`~sparse_tutorial.runs.runner`: runs an experiment and writes its results file;
* :mod:`~sparse_tutorial.runs.sweep`: a grid of runs, in local processes or Ray workers, stored run by run;
* :mod:`~sparse_tutorial.runs.records`: a run's record, the fingerprint of the code that made it, and when a
  stored record may be reused;
* :mod:`~sparse_tutorial.runs.equivalence`: the probe that shows two versions of the code compute the same
  runs;
* :mod:`~sparse_tutorial.runs.cost`: what a grid costs on a device.

The experiments themselves are ``sparse_tutorial.experiments``; their verdicts come from
:mod:`sparse_tutorial.stats`.
"""
