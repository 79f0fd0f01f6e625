"""Fixtures shared by the tests of sparse_tutorial."""
from __future__ import annotations

import errno
import importlib
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import torch

from sparse_tutorial.data import cache

FETCH_MODULE = importlib.import_module("sparse_tutorial.data.fetch")  # the package exports a function fetch


class _HalfThenAction:
    """A file opened for writing whose first ``write`` stores half of its data, calls ``action`` and only
    then (if ``action`` did not raise) stores the rest."""

    def __init__(self, handle: Any, action: Callable[[], None]) -> None:
        self.handle, self.action = handle, action

    def write(self, data: Any) -> int:
        half = len(data) // 2
        self.handle.write(data[:half])
        self.handle.flush()
        action, self.action = self.action, lambda: None
        action()
        return half + self.handle.write(data[half:])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)

    def __enter__(self) -> "_HalfThenAction":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.handle.close()


@pytest.fixture
def interrupt_next_write(monkeypatch) -> Callable[[Callable[[], None]], None]:
    """``interrupt_next_write(action)``: the next file opened for writing through ``Path.open`` (what
    ``write_text``/``write_bytes`` use) writes half its data, then runs ``action`` -- e.g. a second writer
    of the same file -- then writes the rest. Later writes are not touched."""

    def arm(action: Callable[[], None]) -> None:
        original_open = Path.open
        armed = [True]

        def open_(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            handle = original_open(self, mode, *args, **kwargs)
            if not armed[0] or not any(flag in mode for flag in "wax"):
                return handle
            armed[0] = False
            return _HalfThenAction(handle, action)

        monkeypatch.setattr(Path, "open", open_)

    return arm


@pytest.fixture
def fill_disk_mid_write(interrupt_next_write) -> Callable[[], None]:
    """``fill_disk_mid_write()``: the next file written stops half-way with ``OSError(ENOSPC)``."""

    def disk_full() -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    return lambda: interrupt_next_write(disk_full)


@pytest.fixture
def one_thread() -> Iterator[None]:
    """PyTorch on one thread during the test: tiny LSTMs run several times slower on two threads of a busy
    two-core machine (the threads wait for each other)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def toy_translation():
    """A reversal task of 64 training pairs (word-level) and sizes for it: a quick-profile ``nmt`` run on it
    takes seconds. Returns ``(data, sizes)``."""
    from dataclasses import replace

    import torch

    from sparse_tutorial.data import Vocabulary
    from sparse_tutorial.experiments import nmt
    from sparse_tutorial.experiments.nmt.data import Pair, TranslationData

    words = [f"w{i}" for i in range(12)]
    generator = torch.Generator().manual_seed(0)

    def pair() -> Pair:
        length = int(torch.randint(3, 6, (1,), generator=generator))
        source = [words[int(i)] for i in torch.randint(0, 12, (length,), generator=generator)]
        return Pair(source, source[::-1], [" ".join(source[::-1])])

    train, dev, test = [pair() for _ in range(64)], [pair() for _ in range(8)], [pair() for _ in range(12)]
    vocab = Vocabulary.build([p.source for p in train])
    data = TranslationData(train, dev, test, vocab, vocab, {"name": "toy"})
    sizes = replace(nmt.SIZES["quick"], embedding_dim=16, hidden_dim=16, epochs=2, learning_rate=1e-2, batch_tokens=48,
                    beam_size=2)
    return data, sizes


@pytest.fixture
def toy_alignment(toy_translation):
    """The reversal task's pairs with their gold links (source word ``len − 1 − i`` for target word ``i``), and
    quick ``alignment`` sizes for them. Returns ``(alignment, sizes)``: 26 training verses, 6 dev verses and
    8 test verses."""
    from dataclasses import replace

    from sparse_tutorial.experiments import alignment
    from sparse_tutorial.experiments.alignment.data import AlignedPair, Alignment

    data, _ = toy_translation
    aligned = [AlignedPair(p.source, p.target, {(len(p.source) - 1 - i, i) for i in range(len(p.source))}, set())
               for p in data.train[:40]]
    sizes = replace(alignment.SIZES["quick"], embedding_dim=16, hidden_dim=16, epochs=2, learning_rate=1e-2, batch_tokens=64, patience=1)
    return Alignment(aligned[8:34], aligned[34:], aligned[:8], {"name": "toy"}), sizes


@pytest.fixture
def empty_cache(tmp_path, monkeypatch) -> Path:
    """An empty corpus cache for the test (``$SPARSE_TUTORIAL_CACHE``) that stores fake corpora: the tests
    that use it fake what a registry serves, so the pins of the real corpora are not checked here
    (``tests/test_data_pins.py`` tests them)."""
    monkeypatch.setenv("SPARSE_TUTORIAL_CACHE", str(tmp_path / "cache"))
    for module in (cache, FETCH_MODULE):
        monkeypatch.setattr(module, "pin_mismatch", lambda name, files: None)
    return tmp_path / "cache"
