"""sparse_tutorial.which_method: the measurements behind Part I's closing table."""
from __future__ import annotations

import pytest

from sparse_tutorial import which_method
from sparse_tutorial.lookup import LookupTask, train_lookup


def test_every_method_names_a_projection_and_penalty_the_library_has():
    for name, method in which_method.METHODS.items():
        assert method.project() is not None, name
        assert method.chapter, f"{name} links to no chapter"


def test_only_the_straight_through_estimator_fails_gradcheck():
    failing = [name for name, method in which_method.METHODS.items() if not which_method.exact_gradient(method, 0)]
    assert failing == ["Gumbel-softmax, straight-through"]


def test_costs_are_ratios_to_the_first_method():
    methods = {name: which_method.METHODS[name] for name in ("softmax", "sparsemax")}
    costs = which_method.relative_costs(methods, shape=(64, 16), calls=2, repeats=1)
    assert costs["softmax"] == 1.0 and costs["sparsemax"] > 0


def test_accuracy_on_a_longer_task_uses_the_trained_model():
    trained = train_lookup(LookupTask(), steps=150)
    assert which_method.accuracy_on(trained, which_method.LONGER, seed=0) > 0.5  # far above 1 / 5 labels
    with pytest.raises(ValueError):
        LookupTask(length=31)  # longer than the vocabulary: the longest test the model can get is 30 keys
