"""Nothing a checkpoint holds can run code when it is read (issue: checkpoints read without pickle's code
execution): a crafted file whose SHA-256 matches its body is refused, named, and never executed, by both
places that read checkpoints (resuming a run, chapter 9's cache of trained systems)."""
from __future__ import annotations

import hashlib
import io
import os
import pickle
from pathlib import Path

import pytest
import torch
from torch import nn

from sparse_tutorial.training import CHECKPOINT_HEADER, CheckpointError, TrainConfig, load_checkpoint, train


class _RunsCodeWhenUnpickled:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"echo CODE-RAN-ON-LOAD > {self.marker}",)


def _crafted_checkpoint(path: Path, marker: Path) -> Path:
    """A file framed as a checkpoint, its SHA-256 right, whose pickle runs a shell command when unpickled."""
    body = pickle.dumps({"model": _RunsCodeWhenUnpickled(marker)})
    path.write_bytes(CHECKPOINT_HEADER + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    return path


def test_the_crafted_file_would_run_code_if_it_were_unpickled(tmp_path):
    """The attack is real: plain unpickling of the crafted body runs the command (so the tests below mean it)."""
    marker = tmp_path / "marker"
    path = _crafted_checkpoint(tmp_path / "evil.ckpt", marker)
    pickle.loads(path.read_bytes().partition(b"\n")[2])
    assert marker.exists()


def test_load_checkpoint_refuses_a_crafted_checkpoint_without_running_it(tmp_path):
    marker = tmp_path / "marker"
    path = _crafted_checkpoint(tmp_path / "evil.ckpt", marker)
    with pytest.raises(CheckpointError, match="evil.ckpt.*could run code.*delete it"):
        load_checkpoint(path)
    assert not marker.exists()


def test_resuming_a_run_refuses_a_crafted_checkpoint_without_running_it(tmp_path):
    marker = tmp_path / "marker"
    path = _crafted_checkpoint(tmp_path / "run.ckpt", marker)
    model = nn.Linear(2, 1)
    batches = [(torch.randn(4, 2), torch.randn(4, 1))]

    def mse(model, batch):
        x, y = batch
        return ((model(x) - y) ** 2).mean(), {}

    with pytest.raises(CheckpointError, match="run.ckpt"):
        train(model, batches, mse, TrainConfig(epochs=1, device="cpu", checkpoint_path=path))
    assert not marker.exists()


def test_chapter_9_cache_refuses_a_crafted_checkpoint_without_running_it(tmp_path, monkeypatch):
    """:func:`~sparse_tutorial.experiments.nmt.checkpoints.trained_system` reads a cached system from the data
    cache; a crafted file in its place is refused before anything is built from it."""
    from sparse_tutorial.experiments.nmt import checkpoints

    marker = tmp_path / "marker"
    path = _crafted_checkpoint(tmp_path / "nmt-quick-nmt-seed0-0123.pt", marker)
    monkeypatch.setattr(checkpoints, "checkpoint_path", lambda *args, **kwargs: path)
    with pytest.raises(CheckpointError, match="nmt-quick-nmt-seed0-0123.pt"):
        checkpoints.trained_system("NMT", "quick", 0, data=None, device="cpu")
    assert not marker.exists()


def test_an_old_checkpoint_with_a_numpy_generator_state_is_refused_with_what_to_do(tmp_path):
    """Checkpoints written before states were kept to safe types hold NumPy's generator state as an array,
    which a safe read does not rebuild: refused, with "delete it to train from scratch"."""
    import numpy as np

    buffer = io.BytesIO()
    torch.save({"numpy_rng": np.random.get_state()}, buffer)
    body = buffer.getvalue()
    path = tmp_path / "old.ckpt"
    path.write_bytes(CHECKPOINT_HEADER + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    with pytest.raises(CheckpointError, match="old.ckpt.*delete it to train from scratch"):
        load_checkpoint(path)


_TRAINING_SCRIPT = """
import random, sys, time
import numpy as np, torch
from torch import nn
from sparse_tutorial.training import TrainConfig, train

def batches(epoch):
    g = torch.Generator().manual_seed(epoch)
    x = torch.randn(64, 3, generator=g)
    return [(x[i:i + 8], x[i:i + 8] @ torch.tensor([[2.0], [-1.0], [0.5]])) for i in range(0, 64, 8)]

def noisy_mse(model, batch):
    x, y = batch
    noise = torch.rand(()) + random.random() + float(np.random.rand())
    time.sleep(float(sys.argv[3]))
    return ((model(x) - y) ** 2).mean() * (1 + 0.01 * noise), {"noise": float(noise)}

torch.manual_seed(0)
model = nn.Linear(3, 1)
history = train(model, batches, noisy_mse, TrainConfig(epochs=int(sys.argv[2]), lr=0.05, device="cpu",
                                                       checkpoint_path=sys.argv[1] or None))
print(repr([s["noise"] for s in history.steps]), repr(model.weight.tolist()))
"""


def test_a_run_killed_mid_training_resumes_to_the_numbers_of_the_uninterrupted_run(tmp_path):
    """A real kill (SIGKILL of the training process after its first checkpoint), then the same command: the
    resumed run reads its checkpoint safely and ends with the uninterrupted run's draws and weights."""
    import signal
    import subprocess
    import sys
    import time

    def command(checkpoint: str, epochs: int, pause: float) -> list[str]:
        return [sys.executable, "-c", _TRAINING_SCRIPT, checkpoint, str(epochs), str(pause)]

    straight = subprocess.run(command("", 4, 0.0), capture_output=True, text=True, check=True).stdout
    path = tmp_path / "run.ckpt"
    process = subprocess.Popen(command(str(path), 4, 0.2), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not path.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert load_checkpoint(path)["epoch"] < 3  # killed before its last epoch
    resumed = subprocess.run(command(str(path), 4, 0.0), capture_output=True, text=True, check=True).stdout
    assert resumed == straight
