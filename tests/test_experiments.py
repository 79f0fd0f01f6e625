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


def test_nmt_runs_end_to_end_on_a_toy_corpus(monkeypatch):
    """The whole chapter-9 pipeline on a copy task: every number is there and the robust claims hold."""
    from dataclasses import replace

    import torch

    from sparse_tutorial.experiments import nmt

    words = [f"w{i}" for i in range(12)]
    g = torch.Generator().manual_seed(0)

    def pair():
        src = [words[int(i)] for i in torch.randint(0, 12, (int(torch.randint(3, 6, (1,), generator=g)),),
                                                  generator=g)]
        return nmt.Pair(src, src[::-1], [src[::-1]])

    train, dev, test = [pair() for _ in range(64)], [pair() for _ in range(8)], [pair() for _ in range(12)]
    data = nmt.build_data(train, dev, test, 1, {"name": "toy"})
    aligned = [nmt.AlignedPair(p.source, p.target, {(len(p.source) - 1 - i, i) for i in range(len(p.source))},
                               set()) for p in train[:40]]
    tiny = replace(nmt.SIZES["quick"], embed_dim=8, hidden_dim=8, epochs=2, batch_size=16, beam_size=2,
                   systems=("NMT", "+Sparsemax", "+Entropy"), lambdas=(0.01, 0.08))
    monkeypatch.setitem(nmt.SIZES, "quick", tiny)
    out = nmt.run("quick", seeds=2, data=data, alignment=(aligned[8:], aligned[:8], {"name": "toy"}), n_examples=2)
    assert set(out["table"]) == {"NMT", "+Sparsemax", "+Entropy"}
    assert len(out["per_seed"]["NMT"]) == 2 and out["p_values_vs_baseline"]["NMT"] == [None, None]
    assert out["table"]["+Sparsemax"]["zero_share"]["mean"] >= 0 and out["table"]["NMT"]["zero_share"]["mean"] == 0
    assert set(out["lambda_sweep"]) == {"0.01", "0.08"}
    assert set(out["training_speed"]) == set(out["table"]) and out["training_speed"]["NMT"]["overhead"] == 0
    assert set(out["alignment"]["scores"]) == {"NMT", "+Entropy"}
    assert 0 <= out["alignment"]["scores"]["NMT"]["aer"]["mean"] <= 1
    assert len(out["examples"]) == 2 and {"NMT", "reference"} <= set(out["examples"][0])
    assert json.loads(json.dumps(out)) == out
    checks = out["checks"]  # issue 16's results contract
    assert checks["seeds"] == 2 and checks["aer_seeds"] == 2 and set(checks["aer"]) == {"NMT", "+Entropy"}
    assert checks["baseline_bleu_mean"] == out["table"]["NMT"]["bleu"]["mean"] and 0 <= checks["baseline_chrf_mean"] <= 100
    assert checks["shuffled_source_bleu_mean"] >= 0 and set(checks["sink_share"]) == set(out["table"])
    assert all(0 <= share <= 1 for share in checks["sink_share"].values())
    # the toy targets reverse their sources: the diagonal (which links i to i) is almost always wrong
    assert checks["aer_diagonal"] > 0.5 and 0 <= checks["aer_ibm1"] <= 1


@pytest.mark.parametrize("corpus", ["bible", "ding"])
def test_translation_data_from_either_corpus(corpus):
    from dataclasses import replace

    from sparse_tutorial.data import is_fetched
    from sparse_tutorial.experiments import nmt

    if not is_fetched(corpus):
        pytest.skip(f"corpus {corpus!r} not fetched (python -m sparse_tutorial.data fetch {corpus})")
    sizes = replace(nmt.SIZES["quick"], corpus=corpus, n_train=300, n_dev=20, n_test=30)
    data = nmt.load_translation_data(sizes)
    assert data.corpus["name"] == corpus
    assert (len(data.train), len(data.dev), len(data.test)) == (300, 20, 30)
    pairs = data.train + data.dev + data.test
    assert all(len(p.source) <= sizes.max_len and p.target == p.references[0] for p in pairs)
    assert {len(p.references) for p in pairs} == ({3} if corpus == "bible" else {1})
    assert not {tuple(p.source) for p in data.test} & {tuple(p.source) for p in data.train}
