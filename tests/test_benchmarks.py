"""The benchmark scripts import what the library has (bench_nmt_training imported a function that a refactor
had removed, and nothing noticed until it was run), and their small helpers compute what they say."""
import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_every_benchmark_imports_and_has_a_main(path):
    assert callable(_load(path).main)


def test_epochs_to_reach_is_the_first_epoch_at_the_bleu():
    bench = _load(next(p for p in BENCHMARKS if p.stem == "bench_nmt_training"))
    curve = {"dev_bleu": [2.0, 9.5, 13.1, 12.0], "cpu_seconds": [100.0, 200.0, 300.0, 400.0]}
    assert bench.epochs_to_reach(curve, 13.0) == 3
    assert bench.epochs_to_reach(curve, 20.0) is None


def test_learning_curve_stamps_the_cpu_time_of_each_dev_bleu(monkeypatch):
    """The benchmark's training call with the medium sizes it changes (epochs, the setting's changes), on a
    fake corpus and a fake training run that computes two dev BLEUs."""
    from types import SimpleNamespace

    bench = _load(next(p for p in BENCHMARKS if p.stem == "bench_nmt_training"))
    data = SimpleNamespace(dev=["dev verse"], test=["test verse"], bleu=lambda outputs, pairs: 10.0 + len(outputs))

    def train_system(system, corpus, sizes, seed, device):
        assert (sizes.lr_decay_start, sizes.epochs, seed) == (8, 2, 0)
        history = SimpleNamespace(epochs=[{"dev": corpus.bleu(["a"] * k, corpus.dev)} for k in (1, 2)])
        corpus.bleu(["a"], corpus.test)   # a test BLEU is not stamped
        return None, history, []

    monkeypatch.setattr(bench, "translation_corpus", lambda sizes: data)
    monkeypatch.setattr(bench, "train_system", train_system)
    curve = bench.learning_curve({"lr_decay_start": 8}, 2)
    assert curve["dev_bleu"] == [11.0, 12.0] and len(curve["cpu_seconds"]) == 2


def test_every_setting_is_a_change_of_the_medium_sizes_and_after_is_the_medium_recipe():
    from dataclasses import replace

    from sparse_tutorial.experiments.nmt.training import SIZES

    bench = _load(next(p for p in BENCHMARKS if p.stem == "bench_nmt_training"))
    assert bench.BEFORE in bench.SETTINGS
    for changes in bench.SETTINGS.values():
        replace(SIZES["medium"], **changes)
    assert bench.SETTINGS[bench.AFTER] == {"lr_decay_start": SIZES["medium"].lr_decay_start}


def test_the_summary_compares_epochs_to_the_medium_recipes_best():
    bench = _load(next(p for p in BENCHMARKS if p.stem == "bench_nmt_training"))
    curves = {bench.BEFORE: {"dev_bleu": [5.0, 20.0, 21.0, 22.0], "cpu_seconds": [10.0, 20.0, 30.0, 40.0]},
              bench.AFTER: {"dev_bleu": [5.0, 21.5, 21.6], "cpu_seconds": [12.0, 24.0, 36.0]}}
    result = bench.summary(curves)
    assert result["target_dev_bleu"] == 21.6
    assert result["settings"][bench.BEFORE]["epochs_to_target"] == 4
    assert result["settings"][bench.BEFORE]["cpu_seconds_to_target"] == 40.0
    assert result["settings"][bench.AFTER]["last_epoch_change"] == pytest.approx(0.1)
    assert result["epoch_ratio"] == 3 / 4


def test_epoch_summary_takes_medians_and_multiplies_the_schedule_ratio_by_the_epoch_ratio():
    bench = _load(next(p for p in BENCHMARKS if p.stem == "bench_nmt_epoch"))
    seconds = {"before": [100.0, 90.0, 300.0], "this code": [85.0, 72.0, 81.0]}
    got = bench.summary(seconds, epoch_ratio=0.6)
    assert got["median_cpu_seconds"] == {"before": 100.0, "this code": 81.0}
    assert got["epoch_cpu_ratio"] == 0.81 and got["cpu_ratio_to_target"] == 0.486
    assert got["round_ratios"] == [0.85, 0.8, 0.27] and got["cpu_ratio_to_target_range"] == [0.162, 0.51]
    assert bench.summary(seconds, epoch_ratio=None)["cpu_ratio_to_target"] is None
