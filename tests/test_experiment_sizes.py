"""One shape for every experiment's sizes (issue 21): a frozen dataclass per profile of the one ladder, with
the same name for the same thing in every module."""
import dataclasses
from typing import Any

import pytest

from sparse_tutorial.experiments import alignment, classification, explanation, interpretability, summarization
from sparse_tutorial.experiments.nmt import training as nmt_training
from sparse_tutorial.profiles import PROFILES

MODULES = (nmt_training, alignment, summarization, classification, interpretability, explanation)
OLD_NAMES = {"embed_dim", "lr", "finetune_lr", "dim", "train", "eval_examples", "intermediate_examples", "lambdas",
             "n_intermediate"}
"""Names the experiments used for fields that now have one name each (``embedding_dim``, ``learning_rate``,
``n_train``, ``n_test``, ``sparsegen_lambdas``; ``n_intermediate``, the first test items H̃(g_h) was measured
on, is gone: it is measured on every test item of a run that measures it)."""


def _field_names(sizes: Any) -> set[str]:
    """The field names of ``sizes`` and of the dataclasses it holds (directly or as the values of a mapping)."""
    names = set()
    for field in dataclasses.fields(sizes):
        names.add(field.name)
        value = getattr(sizes, field.name)
        for inner in value.values() if isinstance(value, dict) else [value]:
            if dataclasses.is_dataclass(inner):
                names |= _field_names(inner)
    return names


@pytest.mark.parametrize("module", MODULES, ids=lambda module: module.__name__.rsplit(".", 1)[-1])
def test_every_experiment_sizes_each_profile_of_the_ladder_with_a_frozen_dataclass(module):
    assert tuple(module.SIZES) == PROFILES
    for name, sizes in module.SIZES.items():
        assert type(sizes).__name__ == "Sizes" and dataclasses.is_dataclass(sizes), name
        with pytest.raises(dataclasses.FrozenInstanceError):
            sizes.epochs = 1
        assert not _field_names(sizes) & OLD_NAMES, f"{module.__name__} {name}: {_field_names(sizes) & OLD_NAMES}"
    assert not hasattr(module, "SETTINGS") and not hasattr(module, "PROFILE_NOTES")


@pytest.mark.parametrize("module", (classification, interpretability, explanation),
                         ids=lambda module: module.__name__.rsplit(".", 1)[-1])
def test_the_part_3_profiles_say_which_profile_they_are_in_their_note(module):
    for name, sizes in module.SIZES.items():
        assert sizes.note.startswith(f"{name} profile")
