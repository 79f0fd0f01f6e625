"""Tests for the experiment runner (sparse_tutorial.experiments) with a stand-in experiment module."""
import json
import sys
import types

import pytest

from sparse_tutorial.experiments import available, load_results, run_experiment, runner
from sparse_tutorial.experiments.__main__ import main


@pytest.fixture
def fake_experiment(monkeypatch):
    module = types.ModuleType("sparse_tutorial.experiments.fake")
    module.PROFILES = ("quick", "full", "medium-cpu")
    module.run = lambda profile, seeds: {"corpus": {"name": "toy"}, "scores": list(range(seeds)),
                                         "profile_seen": profile}
    monkeypatch.setitem(sys.modules, "sparse_tutorial.experiments.fake", module)
    monkeypatch.setattr(runner, "available", lambda: ["fake"])
    return module


def test_registry_lists_modules_not_helpers():
    names = available()
    assert "nmt" in names and "runner" not in names and "__main__" not in names


def test_run_writes_results_with_provenance(fake_experiment, tmp_path):
    payload = run_experiment("fake", profile="medium-cpu", seeds=3, directory=tmp_path)
    stored = json.loads((tmp_path / "fake.json").read_text())
    assert stored == load_results("fake", tmp_path) == payload
    assert stored["scores"] == [0, 1, 2] and stored["profile_seen"] == "medium-cpu"
    assert stored["environment"]["libraries"]["torch"] and stored["environment"]["device"] in ("cpu", "cuda")
    assert stored["wall_seconds"] >= 0 and stored["seeds"] == 3 and stored["corpus"] == {"name": "toy"}
    assert stored["command"].endswith("fake --profile medium-cpu --seeds 3")


def test_bad_arguments(fake_experiment, tmp_path):
    with pytest.raises(ValueError, match="name"):
        run_experiment("nope", directory=tmp_path)
    with pytest.raises(ValueError, match="profile"):
        run_experiment("fake", profile="huge", directory=tmp_path)
    with pytest.raises(ValueError, match="seeds"):
        run_experiment("fake", seeds=0, directory=tmp_path)


def test_missing_results_are_none(tmp_path):
    assert load_results("never-run", tmp_path) is None


def test_command_line(fake_experiment, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sparse_tutorial.experiments.__main__.available", lambda: ["fake"])
    assert main(["fake", "--profile", "quick", "--seeds", "2", "--out", str(tmp_path)]) == 0
    assert "fake.json" in capsys.readouterr().out
    assert load_results("fake", tmp_path)["scores"] == [0, 1]
