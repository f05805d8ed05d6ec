"""core/files.py: atomic publishing leaves the old or the new file, never a partial one; link-or-copy works across
filesystems; create_once lets the first of racing writers win."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from core import files


def test_a_write_that_fails_half_way_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "model.json"
    target.write_text("old")

    def broken_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        files.write_atomic(target, "new and longer")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


def test_a_write_replaces_the_file_by_rename_so_a_reader_keeps_the_whole_old_file(tmp_path):
    target = tmp_path / "model.json"
    target.write_text("old")
    with open(target) as reader:  # a reader that opened the file before the write
        files.write_atomic(target, "new")
        assert reader.read() == "old"
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


def test_a_write_into_a_deleted_folder_does_not_bring_the_folder_back(tmp_path):
    with pytest.raises(FileNotFoundError):
        files.write_atomic(tmp_path / "gone" / "model.json", b"x")
    assert not (tmp_path / "gone").exists()


def test_place_file_keeping_the_source_links_it_and_leaves_no_temporary_file(tmp_path):
    source, target = tmp_path / "v1.ifc", tmp_path / "model.ifc"
    source.write_bytes(b"IFC")
    target.write_bytes(b"old")
    files.place_file(source, target, keep_source=True)
    assert source.read_bytes() == target.read_bytes() == b"IFC"
    assert os.path.samefile(source, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ifc", "v1.ifc"]


def test_place_file_without_keeping_the_source_moves_it(tmp_path):
    source, target = tmp_path / "run.ifc", tmp_path / "model.ifc"
    source.write_bytes(b"IFC")
    files.place_file(source, target, keep_source=False)
    assert target.read_bytes() == b"IFC" and not source.exists()


def _other_filesystem(path: Path) -> Path:
    for candidate in ("/dev/shm", "/run/user", tempfile.gettempdir()):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK) and os.stat(candidate).st_dev != path.stat().st_dev:
            return Path(candidate)
    pytest.skip("no writable folder on a second filesystem here")


def test_link_or_copy_copies_across_filesystems(tmp_path):
    other = Path(tempfile.mkdtemp(dir=_other_filesystem(tmp_path)))
    try:
        source, target = other / "model.ifc", tmp_path / "model.ifc"
        source.write_bytes(b"IFC across devices")
        with pytest.raises(OSError):
            os.link(source, tmp_path / "probe")  # what link_or_copy meets: no link across filesystems
        files.link_or_copy(source, target)
        assert target.read_bytes() == b"IFC across devices"
        assert not os.path.samefile(source, target)
    finally:
        for path in other.iterdir():
            path.unlink()
        other.rmdir()


def test_link_or_copy_on_one_filesystem_links_the_very_file(tmp_path):
    source, target = tmp_path / "model.ifc", tmp_path / "work.ifc"
    source.write_bytes(b"IFC")
    files.link_or_copy(source, target)
    source.unlink()
    source.write_bytes(b"replaced")
    assert target.read_bytes() == b"IFC"


def test_link_or_copy_of_a_missing_source_fails_and_creates_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        files.link_or_copy(tmp_path / "missing.ifc", tmp_path / "work.ifc")
    assert list(tmp_path.iterdir()) == []


def test_create_once_keeps_the_first_value_private_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "secret"
    files.create_once(path, "first")
    files.create_once(path, "second")
    assert path.read_text() == "first"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]
