"""Tests for sparse_tutorial.atomic: a failed or concurrent write never leaves a broken file."""
import os
import stat

import pytest

from sparse_tutorial.atomic import (
    UnwritableDirectoryError,
    atomic_path,
    atomic_write_bytes,
    atomic_write_text,
    writable_directory,
)


def test_disk_full_mid_write_keeps_the_previous_file(tmp_path, fill_disk_mid_write):
    target = tmp_path / "results.json"
    atomic_write_text(target, '{"good": 1}\n')
    fill_disk_mid_write()
    with pytest.raises(OSError, match="No space left"):
        atomic_write_text(target, '{"new": ' + "9" * 10_000 + "}\n")
    assert target.read_text() == '{"good": 1}\n'
    assert os.listdir(tmp_path) == ["results.json"]  # no temporary file left behind


def test_concurrent_writers_leave_one_whole_file(tmp_path, interrupt_next_write):
    target = tmp_path / "data.bin"
    first, second = b"A" * 50_000, b"B" * 30_000
    interrupt_next_write(lambda: atomic_write_bytes(target, second))  # the second writer runs mid-way
    atomic_write_bytes(target, first)
    assert target.read_bytes() == first  # the last replace wins, whole
    assert os.listdir(tmp_path) == ["data.bin"]


def test_exception_in_the_block_leaves_target_untouched(tmp_path):
    target = tmp_path / "model.pt"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        temporary.write_bytes(b"half")
        raise RuntimeError("killed")
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["model.pt"]


def test_modes_new_file_readable_existing_kept(tmp_path):
    fresh = atomic_write_text(tmp_path / "fresh.txt", "x")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
    private = tmp_path / "private.txt"
    private.write_text("x")
    private.chmod(0o600)
    atomic_write_text(private, "y")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and private.read_text() == "y"


def test_writable_directory_creates_and_rejects(tmp_path):
    assert writable_directory(tmp_path / "a" / "b", "--out").is_dir()
    a_file = tmp_path / "file.json"
    a_file.write_text("{}")
    with pytest.raises(UnwritableDirectoryError, match=r"--out: .*file.json is a file, not a folder"):
        writable_directory(a_file, "--out")
    with pytest.raises(UnwritableDirectoryError, match=r"--out: cannot write in .*file.json/sub"):
        writable_directory(a_file / "sub", "--out")
