"""Issue 51: Part I's running example, the lookup (sparse_tutorial/lookup.py)."""
import pytest
import torch

from sparse_tutorial.lookup import LookupTask, train_lookup


@pytest.mark.parametrize("copies", [1, 3])
def test_a_lookup_hides_its_answer_where_the_task_says(copies):
    task = LookupTask(copies=copies)
    keys, labels, query, answer, occurs = task.sample(500, torch.Generator().manual_seed(0))
    assert keys.shape == labels.shape == occurs.shape == (500, task.length) and query.shape == answer.shape == (500,)
    assert torch.equal(occurs, keys == query[:, None]) and (occurs.sum(-1) == copies).all()
    carried = torch.where(occurs, labels, -1)
    if copies == 1:
        assert torch.equal(carried.amax(-1), answer)
    else:   # two occurrences carry the answer, the third another label
        assert ((carried == answer[:, None]).sum(-1) == 2).all()
        assert ((occurs & (labels != answer[:, None])).sum(-1) == 1).all()
    others = torch.where(occurs, -1, keys)
    assert all(len(set(row[row >= 0].tolist())) == task.length - copies for row in others)   # distinct tokens


def test_bad_tasks_and_penalties_are_named():
    with pytest.raises(ValueError, match="copies"):
        LookupTask(copies=2)
    with pytest.raises(ValueError, match="length"):
        LookupTask(length=40)
    with pytest.raises(ValueError, match="penalty"):
        train_lookup(penalty="l2", steps=1)


def test_training_is_seeded_and_a_penalty_changes_it():
    task = LookupTask(copies=3)
    first, again = (train_lookup(task, steps=20, test_size=50) for _ in range(2))
    assert first["losses"] == again["losses"] and torch.equal(first["test"][-1], again["test"][-1])
    penalised = train_lookup(task, penalty="linf", weight=10.0, steps=20, test_size=50)
    assert penalised["losses"] != first["losses"]
    weights = first["test"][-1]
    assert torch.allclose(weights.sum(-1), torch.ones(50)) and 0 <= first["accuracy"] <= 1
    assert first["accuracy"] == (first["predicted"] == first["test"][3]).double().mean().item()


def test_no_experiment_imports_the_lookup_so_its_changes_leave_stored_runs_valid():
    """lookup.py is in records.NOT_RUN_CODE: editing it must not be able to change what a stored run computed."""
    from pathlib import Path

    from sparse_tutorial.runs.records import NOT_RUN_CODE

    package = Path(__file__).resolve().parents[1] / "sparse_tutorial"
    assert "lookup.py" in NOT_RUN_CODE
    importers = [path.relative_to(package).as_posix() for path in package.rglob("*.py") if path.name != "lookup.py"
                 and "sparse_tutorial.lookup" in path.read_text(encoding="utf-8")]
    assert set(importers) <= set(NOT_RUN_CODE), "only code that no run executes may import the lookup"
