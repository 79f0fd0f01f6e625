"""Tests for the experiment runner (sparse_tutorial.experiments) with a stand-in experiment module."""
import json
import sys
import types

import pytest
import torch

from sparse_tutorial.experiments import available, load_results, run_experiment
from sparse_tutorial.runs import runner
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


def test_nmt_runs_end_to_end_on_a_toy_corpus(monkeypatch, toy_translation):
    """The whole stored-run pipeline on a reversal task: every system from scratch with 3 seeds (one for the
    systems named in no claim), and nmt.json's contract (issues 29 and 30): protocol, seeds per system,
    mechanisms, and every claim judged by the inference standard, 'not tested' where an arm did not run."""
    from dataclasses import replace

    from sparse_tutorial.experiments import nmt
    from sparse_tutorial.stats.inference import VERDICTS

    data, sizes = toy_translation
    tiny = replace(sizes, systems=("NMT", "+Sparsemax", "+Entropy", "+Temp 0.1", "+Temp 0.4"),
                   penalty_weights=(0.01, 0.08), one_seed=("+Temp 0.4",))
    monkeypatch.setitem(nmt.SIZES, "quick", tiny)
    out = nmt.run("quick", seeds=3, data=data, n_examples=2)
    assert set(out["table"]) == {"NMT", "+Sparsemax", "+Entropy", "+Temp 0.1", "+Temp 0.4", "λ = 0.08"}
    assert {arm: row["seeds"] for arm, row in out["table"].items()} == {
        "NMT": 3, "+Sparsemax": 3, "+Entropy": 3, "+Temp 0.1": 3, "+Temp 0.4": 1, "λ = 0.08": 3}
    assert out["table"]["+Sparsemax"]["zero_share"]["mean"] >= 0 and out["table"]["NMT"]["zero_share"]["mean"] == 0
    assert [row["seed"] for row in out["per_seed"]["NMT"]] == [0, 1, 2] and [row["seed"] for row in out["per_seed"]["+Temp 0.4"]] == [0]
    # one budget for every system: no early stopping
    assert all(len(run["dev_bleu"]) == tiny.epochs for seeded in out["training"].values() for run in seeded)
    assert set(out["training_speed"]) == set(tiny.systems) and out["training_speed"]["NMT"]["overhead"] == 0
    assert len(out["examples"]) == 2 and {"NMT", "reference"} <= set(out["examples"][0])
    assert len(out["heatmaps"]["NMT"]) == nmt.HEATMAPS
    assert json.loads(json.dumps(out)) == out
    checks = out["checks"]
    assert checks["protocol"] == "from scratch" and checks["n_test"] == len(data.test)
    assert checks["seeds_per_system"] == {arm: row["seeds"] for arm, row in out["table"].items()}
    assert "+Temp 0.4" not in checks["judged_systems"] and "NMT" in checks["judged_systems"]
    assert checks["baseline_bleu_mean"] == out["table"]["NMT"]["bleu"]["mean"] and checks["shuffled_source_bleu_mean"] >= 0
    sparsemax = checks["mechanism"]["+Sparsemax"]
    assert sparsemax["measure"] == "zero_share" and isinstance(sparsemax["acted"], bool)
    claims = checks["claims"]
    assert {entry["verdict"] for entry in claims.values()} <= set(VERDICTS)
    assert claims["+Coverage beats NMT (Table I)"]["verdict"] == "not tested"  # +Coverage did not run
    tested = [entry for entry in claims.values() if entry["verdict"] != "not tested"]
    assert tested and all(e["p"] <= e["p_holm"] and len(e["ci95"]) == 2 and e["seeds"] == [3, 3] for e in tested)
    assert claims["λ = 0.08 hurts against λ = 0.01 (Table IV)"]["unit"] == "BLEU"
    # a claim on an intervention that did not move its own measure is not judged
    assert (claims["+Sparsemax gains a little over NMT (Table I)"]["verdict"] == "not tested") is (not sparsemax["acted"])


def test_the_medium_grid_trains_the_systems_of_no_claim_with_one_seed():
    from sparse_tutorial.experiments import nmt

    runs = nmt.runs_of("medium", 3)
    pilot = [run for run in runs if run.kind != "system" or run["seed"] not in nmt.design.FRESH_SEEDS]
    seeds = {}
    for run in pilot:
        if run.kind == "system":
            seeds.setdefault(run["temperature"], set()).add(run["seed"])
    assert seeds[0.6] == seeds[0.4] == {0} and seeds[0.8] == seeds[0.1] == {0, 1, 2}
    assert len(pilot) == 3 * 13 - 2 * 2 + 3 * 4 + 1   # 13 systems, two of them once; 4 more λ; the timing run
    assert len(runs) - len(pilot) == len(nmt.design.FRESH_SEEDS) * 8  # the confirmatory design's 8 arms
    assert {run.kind for run in runs} == {"system", "speed"}


def test_every_system_trains_from_scratch_and_the_delayed_penalty_waits(toy_translation):
    """A system run trains its own model from its initialisation for every epoch of its budget, and stores
    per-verse sums that give back its corpus measures; the remedy's penalty is off for its first epochs."""
    from dataclasses import replace

    from sparse_tutorial.experiments import nmt

    data, sizes = toy_translation
    sizes = replace(sizes, epochs=3)
    out = nmt.execute(nmt.system_run("quick", nmt.SYSTEMS["+Entropy from epoch 3"], 0), data=data, device="cpu",
                      sizes=sizes)
    epochs = out["epochs"]
    assert len(epochs["dev_bleu"]) == 3 and len(epochs["dev_entropy"]) == 3
    assert epochs["loss"][:2] == pytest.approx(epochs["nll"][:2]) and epochs["loss"][2] > epochs["nll"][2]
    verses = out["verses"]
    assert sum(verses["entropy"]) / sum(verses["tokens"]) == pytest.approx(out["metrics"]["entropy_per_token"], rel=1e-3)
    assert len(verses["tokens"]) == len(data.test) == len(out["outputs"]) and len(out["heatmaps"]) == nmt.HEATMAPS


def test_the_chapters_quick_systems_are_trained_once_and_then_loaded(toy_translation, monkeypatch, tmp_path):
    """Chapters 9 and 10 share their quick systems through the checkpoint cache: the first call trains (from
    scratch, as the stored grid does), the second loads the same weights, history and dev measures."""
    from sparse_tutorial.experiments.nmt import checkpoints as nmt_checkpoints
    from sparse_tutorial.experiments.nmt.training import SYSTEMS

    monkeypatch.setattr(nmt_checkpoints, "cache_dir", lambda: tmp_path)
    data, sizes = toy_translation
    first = nmt_checkpoints.trained_system("+Entropy", "quick", 0, data, "cpu", sizes)
    path = nmt_checkpoints.checkpoint_path("+Entropy", "quick", 0, data, sizes)
    assert path.exists() and path.parent == tmp_path / "checkpoints"
    assert path != nmt_checkpoints.checkpoint_path("NMT", "quick", 0, data, sizes)
    imitated = {**nmt_checkpoints.cpu_backend(), "torch_capability": "DEFAULT",
                "overrides": {"ATEN_CPU_CAPABILITY": "default"}}
    with monkeypatch.context() as patch:   # a system trained under another CPU back end is cached apart
        patch.setattr(nmt_checkpoints, "cpu_backend", lambda: imitated)
        assert nmt_checkpoints.checkpoint_path("+Entropy", "quick", 0, data, sizes) != path
    monkeypatch.setattr(nmt_checkpoints, "train_system", lambda *args, **kwargs: pytest.fail("trained again"))
    again = nmt_checkpoints.trained_system("+Entropy", "quick", 0, data, "cpu", sizes)
    assert all(torch.equal(a, b) for a, b in zip(first.model.state_dict().values(), again.model.state_dict().values()))
    assert again.history.epochs == first.history.epochs and len(again.history.epochs) == sizes.epochs
    assert again.dev_attention == first.dev_attention and len(again.dev_attention) == sizes.epochs
    assert again.history.best_epoch == first.history.best_epoch and SYSTEMS["+Entropy"].penalty == "entropy"


def test_the_aligned_verses_gain_the_other_english_versions_for_training_only():
    """Issue 29's idea for aligners that align: the WEB, KJV and BBE translations of each training verse are
    extra training pairs (without links); dev and test verses keep their one linked translation."""
    from dataclasses import replace

    from sparse_tutorial.data import is_fetched
    from sparse_tutorial.experiments import alignment
    from sparse_tutorial.experiments.alignment.data import load_alignment_data

    if not (is_fetched("bible") and is_fetched("bible_alignments")):
        pytest.skip("corpora 'bible' and 'bible_alignments' not fetched")
    sizes = replace(alignment.SIZES["quick"].corpus, n_train=60, n_dev=10, n_test=5)
    plain = load_alignment_data(sizes)
    extended = load_alignment_data(replace(sizes, extra_targets=True))
    assert (len(plain.train), len(plain.dev), len(plain.test)) == (50, 10, 5)
    assert extended.dev == plain.dev and extended.test == plain.test and extended.train[:50] == plain.train
    extra = extended.train[50:]
    assert 50 < len(extra) <= 150 and all(not p.sure and not p.possible for p in extra)
    assert {tuple(p.source) for p in extra} <= {tuple(p.source) for p in plain.train}
    assert not {tuple(p.source) for p in extra} & {tuple(p.source) for p in plain.dev + plain.test}
    assert extended.provenance["extra_translations"] == len(extra) and plain.provenance["extra_translations"] == 0
    with pytest.raises(ValueError, match="n_dev must hold out"):
        load_alignment_data(replace(sizes, n_dev=0))


def test_alignment_test_verses_are_a_seeded_sample_not_the_first_verses():
    """The aligned test split is in book order: the test verses are a seeded random sample of those that
    fit ``max_len`` (the same on every call), and all of them, in order, when ``n_test`` covers them (issue 50)."""
    from dataclasses import replace

    from sparse_tutorial.data import is_fetched, load
    from sparse_tutorial.experiments import alignment
    from sparse_tutorial.experiments.alignment.data import load_alignment_data

    if not (is_fetched("bible") and is_fetched("bible_alignments")):
        pytest.skip("corpora 'bible' and 'bible_alignments' not fetched")
    sizes = replace(alignment.SIZES["quick"].corpus, n_train=60, n_dev=10, n_test=40)
    fitting = [[w.lower() for w in v.target_tokens] for v in load("bible_alignments", verbose=False).test
               if max(len(v.source_tokens), len(v.target_tokens)) <= sizes.max_len]
    drawn = [pair.target for pair in load_alignment_data(sizes).test]
    assert len(drawn) == 40 and drawn != fitting[:40] and all(target in fitting for target in drawn)
    assert drawn == [pair.target for pair in load_alignment_data(sizes).test]
    positions = [fitting.index(target) for target in drawn]
    assert positions == sorted(positions) and max(positions) > len(fitting) // 2   # spread over the split
    everything = load_alignment_data(replace(sizes, n_test=len(fitting) + 5)).test
    assert [pair.target for pair in everything] == fitting


def test_alignment_runs_end_to_end_on_a_toy_corpus(toy_alignment, monkeypatch):
    """Table III's experiment on the reversal task: aligners with 3 seeds, their controls, the aligners
    without attention, and alignment.json's contract (issue 29): AER per system with its seeds, the
    diagonal's AER and the claims, 'not tested' where an arm did not run or fails its controls."""
    from sparse_tutorial.experiments import alignment
    from sparse_tutorial.stats.inference import VERDICTS

    corpus, sizes = toy_alignment
    monkeypatch.setitem(alignment.SIZES, "quick", sizes)
    out = alignment.run("quick", seeds=3, alignment=corpus)
    assert set(out["scores"]) == set(out["controls"]) == set(sizes.systems) == {"NMT", "+Entropy"}
    assert all(len(seeded) == 3 and len(seeded[0]["dev_nll"]) <= sizes.epochs for seeded in out["per_seed"].values())
    assert all([row["seed"] for row in seeded] == [0, 1, 2] for seeded in out["per_seed"].values())
    assert all(set(control["failing_seeds"]) <= {0, 1, 2} for control in out["controls"].values())
    assert (out["corpus"]["train_pairs"], out["corpus"]["dev_pairs"], out["corpus"]["test_pairs"]) == (26, 6, 8)
    example = out["examples"][0]
    assert set(example["attention"]) == {"NMT", "+Entropy"}
    assert len(example["attention"]["NMT"]) == len(example["target"]) and len(example["attention"]["NMT"][0]) == len(example["source"])
    assert json.loads(json.dumps(out)) == out
    assert all(score[k]["ci95"] is None or score[k]["ci95"][0] <= score[k]["mean"] <= score[k]["ci95"][1]
               for score in out["scores"].values() for k in ("aer", "saer"))  # each with its seeds' interval
    checks = out["checks"]
    assert checks["aer_seeds"] == 3 and set(checks["aer"]) == {"NMT", "+Entropy"}
    # the toy targets reverse their sources: the diagonal (which links i to i) is almost always wrong
    assert checks["aer_diagonal"] > 0.5 and 0 <= checks["aer_ibm1"] <= 1
    assert checks["nmt_below_diagonal"] == (checks["aer"]["NMT"] < checks["aer_diagonal"])
    claims = checks["claims"]
    assert {entry["verdict"] for entry in claims.values()} <= set(VERDICTS)
    assert claims["+Coverage lowers AER (Table III)"]["verdict"] == "not tested"  # +Coverage did not run
    passes = out["controls"]["NMT"]["passes"] and out["controls"]["+Entropy"]["passes"]
    assert (claims["+Entropy lowers AER (Table III)"]["verdict"] == "not tested") is (not passes)


def test_translation_data_from_both_german_versions():
    from dataclasses import replace

    from sparse_tutorial.data import is_fetched
    from sparse_tutorial.data.subwords import SubwordVocabulary
    from sparse_tutorial.experiments import nmt
    from sparse_tutorial.experiments.nmt.data import load_translation_data

    if not is_fetched("bible"):
        pytest.skip("corpus 'bible' not fetched (python -m sparse_tutorial.data fetch bible)")
    corpus = replace(nmt.SIZES["quick"].corpus, n_train=300, n_dev=20, n_test=30)
    data = load_translation_data(corpus)
    assert isinstance(data.src_vocab, SubwordVocabulary) and len(data.src_vocab) == corpus.vocab_size
    assert (len(data.train), len(data.dev), len(data.test)) == (300, 20, 30)
    pairs = data.train + data.dev + data.test
    assert all(len(p.source) <= corpus.max_len and len(p.target) <= corpus.max_len for p in pairs)
    assert {len(p.references) for p in pairs} == {3}
    assert not {tuple(p.source) for p in data.test} & {tuple(p.source) for p in data.train}
    # both German versions are training sources: some English verse occurs with two different sources
    sources_of: dict = {}
    for p in load_translation_data(replace(corpus, n_train=10**6)).train:
        sources_of.setdefault(tuple(p.target), set()).add(tuple(p.source))
    assert any(len(sources) == 2 for sources in sources_of.values())

