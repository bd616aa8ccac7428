"""The streamed ``.tar.gz``: readable by ``tarfile``, produced in bounded chunks."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

from tracking.store.archive import tar_gz
from tracking.store.base import CHUNK, ArtifactStore
from tracking.store.local import LocalArtifactStore, real_roots


async def archived(store: ArtifactStore, uri: str) -> list[bytes]:
    return [piece async for piece in tar_gz(store, [e async for e in store.walk(uri)])]


async def test_archive_of_a_tree_reads_back(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "x.txt").write_text("x")
    (root / "a" / "b" / "y.txt").write_text("yy")
    (root / "a" / "empty").touch()
    store = LocalArtifactStore("local", root, real_roots([root]))
    data = b"".join(await archived(store, "a"))
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        names = archive.getnames()
        assert names == [".", "empty", "x.txt", "b", "b/y.txt"]
        y = archive.extractfile("b/y.txt")
        assert y is not None
        assert y.read() == b"yy"
        assert archive.getmember("empty").size == 0


async def test_a_large_file_streams_in_bounded_chunks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    payload = os.urandom(3 * 1024 * 1024)  # incompressible
    (root / "big.bin").write_bytes(payload)
    store = LocalArtifactStore("local", root, real_roots([root]))
    chunks = await archived(store, "big.bin")
    assert len(chunks) > 10
    # No chunk holds much more than one read block (plus the compressor's overhead).
    assert max(len(c) for c in chunks) < 2 * CHUNK
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks)), mode="r:gz") as archive:
        member = archive.extractfile(".")
        assert member is not None
        assert member.read() == payload


async def test_archive_ends_on_a_record_boundary(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "f").write_bytes(b"abc")
    store = LocalArtifactStore("local", root, real_roots([root]))
    raw = gzip.decompress(b"".join(await archived(store, "f")))
    assert len(raw) % tarfile.RECORDSIZE == 0


async def test_members_keep_the_size_they_were_walked_with(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "grows").write_bytes(b"abc")
    (root / "shrinks").write_bytes(b"abcdef")
    store = LocalArtifactStore("local", root, real_roots([root]))
    entries = [e async for e in store.walk(".")]
    (root / "grows").write_bytes(b"abc" * 1000)
    (root / "shrinks").write_bytes(b"ab")
    data = b"".join([piece async for piece in tar_gz(store, entries)])
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        grows, shrinks = archive.extractfile("grows"), archive.extractfile("shrinks")
        assert grows is not None
        assert shrinks is not None
        assert grows.read() == b"abc"
        assert shrinks.read() == b"ab\0\0\0\0"
