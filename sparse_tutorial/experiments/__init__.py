"""The book's experiments: one package per experiment (``nmt/``: the grid in ``__init__``, beside it its
data, training, claims and results), each a grid of independent runs, run by
``python -m sparse_tutorial.experiments NAME --profile {quick,full} [--seeds N] [--workers N | --address auto]``
and written to ``book/results/NAME.json`` (see :mod:`sparse_tutorial.runs.runner` and, for running
the grid in parallel, :mod:`sparse_tutorial.runs.sweep`)."""
from sparse_tutorial.runs.runner import available, load_results, run_experiment, write_results

__all__ = ["available", "load_results", "run_experiment", "write_results"]
