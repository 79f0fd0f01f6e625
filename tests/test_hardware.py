"""The CPU back end a run used is recorded (sparse_tutorial.hardware), and tools/imitate_cpu.py changes it."""
import sys
from pathlib import Path

import pytest
import torch

from sparse_tutorial.runs.runner import environment
from sparse_tutorial.hardware import BACKEND_VARIABLES, cpu_backend, describe_cpu_backend

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from imitate_cpu import IMITATIONS, capability_under, environment_for  # noqa: E402


def test_cpu_backend_names_the_kernels_that_ran(monkeypatch):
    for name in BACKEND_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    backend = cpu_backend()
    assert backend["torch_capability"] == torch.backends.cpu.get_cpu_capability()
    assert backend["torch_threads"] == torch.get_num_threads()
    assert backend["overrides"] == {"MKL_CBWR": "AVX2"}
    assert backend["model"]
    if Path("/proc/cpuinfo").is_file():
        assert "sse4_2" in backend["vector_flags"]


def test_results_record_the_cpu_backend():
    assert environment(torch.device("cpu"))["cpu"]["torch_capability"] == torch.backends.cpu.get_cpu_capability()


def test_describe_cpu_backend():
    backend = {"model": "AMD EPYC 7B13", "torch_capability": "AVX2", "vector_flags": ["avx2"], "torch_threads": 1,
               "overrides": {"ATEN_CPU_CAPABILITY": "avx2"}}
    assert describe_cpu_backend(backend) == "AMD EPYC 7B13, AVX2 kernels, 1 thread (imitated: ATEN_CPU_CAPABILITY=avx2)"
    assert describe_cpu_backend({**backend, "torch_threads": 2, "overrides": {}}) == "AMD EPYC 7B13, AVX2 kernels, 2 threads"
    assert describe_cpu_backend(None) == "CPU back end not recorded"


def test_imitation_names_are_checked():
    with pytest.raises(ValueError, match="imitation must be one of"):
        environment_for("avx1024")


def test_imitations_change_the_kernels_and_threads():
    native, _ = capability_under("native")
    capability, threads = capability_under("default-1thread")
    assert (capability, threads) == ("DEFAULT", 1)
    if native == "AVX512":
        assert capability_under("avx2-1thread") == ("AVX2", 1)
    assert set(IMITATIONS["avx2"]) <= set(BACKEND_VARIABLES)

