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


def test_seconds_to_reach_is_the_first_epoch_at_the_bleu():
    bench = _load(next(p for p in BENCHMARKS if p.stem == "bench_nmt_training"))
    curve = {"dev_bleu": [2.0, 9.5, 13.1, 12.0], "cpu_seconds": [100.0, 200.0, 300.0, 400.0]}
    assert bench.seconds_to_reach(curve, 13.0) == 300.0
    assert bench.seconds_to_reach(curve, 20.0) is None
