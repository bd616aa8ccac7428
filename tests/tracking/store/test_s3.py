"""The S3 artifact store against a real S3-compatible server: confinement to its bucket and
prefix, the walk the archive is built from, bounded reads and chunks, and deletion."""

from __future__ import annotations

import io
import os
import tarfile
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.redis_server import free_port
from tests.support.s3_server import ACCESS_KEY, SECRET_KEY, S3Server
from tracking.store.archive import tar_gz
from tracking.store.base import (
    CHUNK,
    ArtifactStore,
    MissingFile,
    OutsideStore,
    RootNotDeletable,
    TooLarge,
)
from tracking.store.egress import EgressProxy
from tracking.store.local import LocalArtifactStore, real_roots
from tracking.store.s3 import S3ArtifactStore, S3Options, StoreFailed, s3_client

TREE = {
    "a/x.txt": b"x",
    "a/z": b"zzz",
    "a/sub/y.txt": b"yy",
    "a/sub/deeper/w": b"w" * 700,
    "a/b2/v": b"v",
}


def open_store(endpoint: str, path: str, egress: EgressProxy) -> S3ArtifactStore:
    configuration = {"path": path, "client_kwargs": {"endpoint_url": endpoint}}
    secrets = {"key": ACCESS_KEY, "secret": SECRET_KEY}
    options = S3Options(timedelta(seconds=2), timedelta(seconds=30), 1, egress.url)
    return S3ArtifactStore("s3store", path, s3_client(configuration, secrets, options))


@pytest.fixture
def bucket(s3: S3Server) -> str:
    name = s3.new_bucket()
    s3.put(name, {f"store/{key}": body for key, body in TREE.items()})
    s3.put(name, {"store2/a/x.txt": b"sibling", "store/ab/q": b"q", "store/a.txt": b"t"})
    return name


@pytest.fixture
def store(s3: S3Server, bucket: str, egress: EgressProxy) -> S3ArtifactStore:
    return open_store(s3.endpoint, f"s3://{bucket}/store", egress)


@pytest.mark.parametrize(
    "uri",
    [
        "s3://other-bucket/store/a/x.txt",
        "s3://{bucket}/store2/a/x.txt",
        "s3://{bucket}/store/../store2/a/x.txt",
        "s3://{bucket}/store/a/./x.txt",
        "s3://{bucket}/store//a",
        "s3://{bucket}",
        "/store/a/x.txt",
        "gs://{bucket}/store/a/x.txt",
        "s3://{bucket}/store/a/\x00",
    ],
)
async def test_uris_outside_the_bucket_and_prefix_are_refused(
    store: S3ArtifactStore, bucket: str, uri: str
) -> None:
    with pytest.raises(OutsideStore):
        await store.check(uri.format(bucket=bucket))


async def test_uris_inside_the_prefix_are_accepted(store: S3ArtifactStore, bucket: str) -> None:
    assert store.key(f"s3://{bucket}/store") == "store"
    assert store.key(f"s3://{bucket}/store/a/") == "store/a"
    assert store.key(f"s3://{bucket}/store/a/x.txt") == "store/a/x.txt"


async def test_a_store_at_the_bucket_root_holds_every_key(
    s3: S3Server, bucket: str, egress: EgressProxy
) -> None:
    store = open_store(s3.endpoint, f"s3://{bucket}", egress)
    assert store.key(f"s3://{bucket}/store2/a/x.txt") == "store2/a/x.txt"
    assert await store.exists(f"s3://{bucket}/store2/a")


async def test_exists_knows_files_and_directories_but_not_siblings(
    s3: S3Server, store: S3ArtifactStore, bucket: str
) -> None:
    assert await store.exists(f"s3://{bucket}/store/a/x.txt")
    assert await store.exists(f"s3://{bucket}/store/a")
    # `store/ab/q` and `store/a.txt` share the string start `store/a`, not the directory.
    s3.put(bucket, {"store/c-d/q": b"q"})
    assert not await store.exists(f"s3://{bucket}/store/c")
    assert not await store.exists(f"s3://{bucket}/store/missing")


async def test_the_walk_is_the_local_stores_walk(store: S3ArtifactStore, tmp_path: Path) -> None:
    for key, body in TREE.items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(body)
    local = LocalArtifactStore("local", tmp_path, real_roots([tmp_path]))

    async def walked(of: ArtifactStore, uri: str) -> list[tuple[str, bool, int]]:
        return [(e.name, e.is_dir, e.size) async for e in of.walk(uri)]

    s3_walk = await walked(store, f"s3://{store.bucket}/store/a")
    assert s3_walk == await walked(local, "a")
    assert [name for name, _, _ in s3_walk] == [
        ".",
        "x.txt",
        "z",
        "b2",
        "b2/v",
        "sub",
        "sub/y.txt",
        "sub/deeper",
        "sub/deeper/w",
    ]
    assert await walked(store, f"s3://{store.bucket}/store/a/z") == [(".", False, 3)]
    assert await walked(store, f"s3://{store.bucket}/store/none") == []
    assert await store.size(f"s3://{store.bucket}/store/a") == 1 + 3 + 1 + 2 + 700


async def test_read_bytes_is_bounded_and_missing_or_outside_is_404(
    store: S3ArtifactStore, bucket: str
) -> None:
    assert await store.read_bytes(f"s3://{bucket}/store/a/z", limit=3) == b"zzz"
    with pytest.raises(TooLarge):
        await store.read_bytes(f"s3://{bucket}/store/a/z", limit=2)
    for uri in (f"s3://{bucket}/store/a/none", f"s3://{bucket}/store2/a/x.txt"):
        with pytest.raises(MissingFile):
            await store.read_bytes(uri, limit=100)


async def test_delete_removes_everything_under_the_prefix_and_nothing_else(
    s3: S3Server, store: S3ArtifactStore, bucket: str
) -> None:
    await store.delete(f"s3://{bucket}/store/a")
    assert s3.keys(bucket) == ["store/a.txt", "store/ab/q", "store2/a/x.txt"]
    await store.delete(f"s3://{bucket}/store/a.txt")
    await store.delete(f"s3://{bucket}/store/gone")  # nothing there: nothing to do
    assert s3.keys(bucket) == ["store/ab/q", "store2/a/x.txt"]


async def test_the_root_cannot_be_deleted(s3: S3Server, store: S3ArtifactStore) -> None:
    with pytest.raises(RootNotDeletable):
        await store.delete(f"s3://{store.bucket}/store/")
    assert len(s3.keys(store.bucket)) == len(TREE) + 3


async def test_a_large_object_streams_in_bounded_chunks(
    s3: S3Server, store: S3ArtifactStore
) -> None:
    # Larger than what loopback's socket buffers hand obstore at once on a loaded machine:
    # obstore yields what has arrived (at least CHUNK), and at 6 MiB a piece of 664 KiB
    # was seen.
    payload = os.urandom(24 * 1024 * 1024)
    s3.put(store.bucket, {"store/big/blob": payload})
    entries = [e async for e in store.walk(f"s3://{store.bucket}/store/big")]
    chunks = [chunk async for chunk in store.chunks(entries[1])]
    # The object comes in many pieces, each a small part of it: never whole in memory.
    assert len(chunks) > 10
    assert min(len(c) for c in chunks[:-1]) >= CHUNK
    assert max(len(c) for c in chunks) < len(payload) // 8
    archive = [piece async for piece in tar_gz(store, entries)]
    assert max(len(piece) for piece in archive) < len(payload) // 8
    with tarfile.open(fileobj=io.BytesIO(b"".join(archive)), mode="r:gz") as tar:
        member = tar.extractfile("blob")
        assert member is not None
        assert member.read() == payload


async def test_an_unreachable_store_is_a_502_that_says_nothing_of_why(
    bucket: str, egress: EgressProxy
) -> None:
    store = open_store(f"http://127.0.0.1:{free_port()}", f"s3://{bucket}/store", egress)
    with pytest.raises(StoreFailed) as raised:
        await store.exists(f"s3://{bucket}/store/a")
    assert raised.value.status_code == 502
    assert raised.value.message == (
        "The server could not complete the request to the artifact store."
    )
