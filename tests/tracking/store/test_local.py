"""The local artifact store stays inside its root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared.errors import DoesNotExist, Forbidden
from tracking.store.local import LocalArtifactStore, OutsideStore


@pytest.fixture
def store(tmp_path: Path) -> LocalArtifactStore:
    root = tmp_path / "root"
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "f.txt").write_text("hello")
    (tmp_path / "outside.txt").write_text("secret")
    return LocalArtifactStore(name="local", root=root)


def test_paths_inside_the_root_resolve(store: LocalArtifactStore) -> None:
    assert store.resolve(str(store.root / "dir" / "f.txt")) == (store.root / "dir/f.txt").resolve()
    assert store.resolve("dir/f.txt") == (store.root / "dir/f.txt").resolve()


@pytest.mark.parametrize(
    "uri",
    ["../outside.txt", "dir/../../outside.txt", "/etc/passwd", "/", "dir/\x00"],
)
def test_paths_that_leave_the_root_are_refused(store: LocalArtifactStore, uri: str) -> None:
    with pytest.raises(OutsideStore):
        store.resolve(uri)


def test_a_link_out_of_the_root_is_refused(store: LocalArtifactStore, tmp_path: Path) -> None:
    (store.root / "link").symlink_to(tmp_path / "outside.txt")
    (store.root / "dirlink").symlink_to(tmp_path)
    with pytest.raises(OutsideStore):
        store.resolve("link")
    with pytest.raises(OutsideStore):
        store.resolve("dirlink/outside.txt")


def test_a_sibling_with_the_root_as_prefix_is_outside(tmp_path: Path) -> None:
    store = LocalArtifactStore(name="local", root=tmp_path / "root")
    (tmp_path / "root").mkdir()
    (tmp_path / "root-evil").mkdir()
    with pytest.raises(OutsideStore):
        store.resolve(str(tmp_path / "root-evil"))


def test_a_link_inside_the_root_is_followed(store: LocalArtifactStore) -> None:
    (store.root / "alias").symlink_to(store.root / "dir")
    assert store.read_bytes("alias/f.txt", limit=100) == b"hello"


def test_read_outside_the_root_reads_as_missing(store: LocalArtifactStore) -> None:
    with pytest.raises(DoesNotExist):
        store.read_bytes("../outside.txt", limit=100)


def test_read_above_the_limit_is_refused(store: LocalArtifactStore) -> None:
    with pytest.raises(Forbidden):
        store.read_bytes("dir/f.txt", limit=4)


def test_size_sums_a_directory(store: LocalArtifactStore) -> None:
    (store.root / "dir" / "g.bin").write_bytes(b"12345678")
    assert store.size("dir") == 5 + 8


def test_delete_removes_a_tree_and_refuses_the_root(store: LocalArtifactStore) -> None:
    with pytest.raises(Forbidden):
        store.delete(str(store.root))
    store.delete("dir")
    assert not (store.root / "dir").exists()
    store.delete("dir")  # already gone: nothing to do


def test_delete_through_a_link_never_leaves_the_root(
    store: LocalArtifactStore, tmp_path: Path
) -> None:
    (store.root / "escape").symlink_to(tmp_path)
    with pytest.raises(OutsideStore):
        store.delete("escape")
    assert (tmp_path / "outside.txt").exists()
    assert os.path.islink(store.root / "escape")


def test_only_local_artifact_stores_can_be_opened() -> None:
    from types import SimpleNamespace

    from tracking.store import StoreUnsupported, store_for

    local = SimpleNamespace(
        name="s", type="artifact_store", flavor="local", configuration={"path": "/data"}
    )
    assert store_for(local).root == Path("/data")
    for other in (
        SimpleNamespace(name="s3", type="artifact_store", flavor="s3", configuration={}),
        SimpleNamespace(name="o", type="orchestrator", flavor="local", configuration={}),
    ):
        with pytest.raises(StoreUnsupported) as raised:
            store_for(other)
        assert raised.value.status_code == 501
