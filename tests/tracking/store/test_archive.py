"""The streamed ``.tar.gz``: readable by ``tarfile``, produced in bounded chunks."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

from tracking.store.archive import CHUNK, tar_gz
from tracking.store.local import LocalArtifactStore


def test_archive_of_a_tree_reads_back(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "x.txt").write_text("x")
    (root / "a" / "b" / "y.txt").write_text("yy")
    (root / "a" / "empty").touch()
    store = LocalArtifactStore("local", root)
    data = b"".join(tar_gz(store.walk("a")))
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        names = archive.getnames()
        assert names == [".", "empty", "x.txt", "b", "b/y.txt"]
        y = archive.extractfile("b/y.txt")
        assert y is not None
        assert y.read() == b"yy"
        assert archive.getmember("empty").size == 0


def test_a_large_file_streams_in_bounded_chunks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    payload = os.urandom(3 * 1024 * 1024)  # incompressible
    (root / "big.bin").write_bytes(payload)
    store = LocalArtifactStore("local", root)
    chunks = list(tar_gz(store.walk("big.bin")))
    assert len(chunks) > 10
    # No chunk holds much more than one read block (plus the compressor's overhead).
    assert max(len(c) for c in chunks) < 2 * CHUNK
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks)), mode="r:gz") as archive:
        member = archive.extractfile(".")
        assert member is not None
        assert member.read() == payload


def test_archive_ends_on_a_record_boundary(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "f").write_bytes(b"abc")
    store = LocalArtifactStore("local", root)
    raw = gzip.decompress(b"".join(tar_gz(store.walk("f"))))
    assert len(raw) % tarfile.RECORDSIZE == 0
