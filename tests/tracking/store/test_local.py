"""The local artifact store stays inside its root."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from shared.errors import DoesNotExist, Forbidden
from tracking.store.base import LocalFilesRefused, OutsideStore
from tracking.store.local import LocalArtifactStore, real_roots


@pytest.fixture
def store(tmp_path: Path) -> LocalArtifactStore:
    root = tmp_path / "root"
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "f.txt").write_text("hello")
    (tmp_path / "outside.txt").write_text("secret")
    return LocalArtifactStore(name="local", root=root, allowed=real_roots([root]))


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
    store = LocalArtifactStore(name="local", root=tmp_path / "root", allowed=real_roots([tmp_path]))
    (tmp_path / "root").mkdir()
    (tmp_path / "root-evil").mkdir()
    with pytest.raises(OutsideStore):
        store.resolve(str(tmp_path / "root-evil"))


async def test_a_link_inside_the_root_is_followed(store: LocalArtifactStore) -> None:
    (store.root / "alias").symlink_to(store.root / "dir")
    assert await store.read_bytes("alias/f.txt", limit=100) == b"hello"


async def test_read_outside_the_root_reads_as_missing(store: LocalArtifactStore) -> None:
    with pytest.raises(DoesNotExist):
        await store.read_bytes("../outside.txt", limit=100)


async def test_read_above_the_limit_is_refused(store: LocalArtifactStore) -> None:
    with pytest.raises(Forbidden):
        await store.read_bytes("dir/f.txt", limit=4)


async def test_size_sums_a_directory(store: LocalArtifactStore) -> None:
    (store.root / "dir" / "g.bin").write_bytes(b"12345678")
    assert await store.size("dir") == 5 + 8


async def test_delete_removes_a_tree_and_refuses_the_root(store: LocalArtifactStore) -> None:
    with pytest.raises(Forbidden):
        await store.delete(str(store.root))
    await store.delete("dir")
    assert not (store.root / "dir").exists()
    await store.delete("dir")  # already gone: nothing to do


async def test_delete_through_a_link_never_leaves_the_root(
    store: LocalArtifactStore, tmp_path: Path
) -> None:
    (store.root / "escape").symlink_to(tmp_path)
    with pytest.raises(OutsideStore):
        await store.delete("escape")
    assert (tmp_path / "outside.txt").exists()
    assert (store.root / "escape").is_symlink()


async def test_stores_open_by_flavor_and_other_flavors_are_501() -> None:
    from types import SimpleNamespace

    from sqlmodel.ext.asyncio.session import AsyncSession

    from tracking.component.secrets import ComponentSecrets
    from tracking.secret.service import SecretCipher
    from tracking.store import ArtifactStores, StoreUnsupported
    from tracking.store.s3 import S3Options

    # Unbound: these flavors reference no secret, so nothing may reach a database.
    session = AsyncSession()
    stores = ArtifactStores(
        ComponentSecrets(None),
        SecretCipher(None),
        S3Options(timedelta(seconds=1), timedelta(seconds=1), 0, "http://127.0.0.1:9"),
        [Path("/data")],
    )
    local = SimpleNamespace(
        name="s", type="artifact_store", flavor="local", configuration={"path": "/data"}
    )
    opened = await stores.open(local, session)
    assert isinstance(opened, LocalArtifactStore)
    assert opened.root == Path("/data")
    for other in (
        SimpleNamespace(name="g", type="artifact_store", flavor="gcp", configuration={}),
        SimpleNamespace(name="o", type="orchestrator", flavor="local", configuration={}),
    ):
        with pytest.raises(StoreUnsupported) as raised:
            await stores.open(other, session)
        assert raised.value.status_code == 501


REFUSED = "Files in a local artifact store cannot be accessed from the server."


@pytest.fixture
def allowed(tmp_path: Path) -> Path:
    (tmp_path / "allowed").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.txt").write_text("secret")
    return tmp_path / "allowed"


async def _every_file_operation_is_refused(store: LocalArtifactStore, uri: str) -> None:
    operations = [
        store.check(uri),
        store.exists(uri),
        store.read_bytes(uri, limit=100),
        store.size(uri),
        store.delete(uri),
    ]
    for operation in operations:
        with pytest.raises(LocalFilesRefused) as raised:
            await operation
        assert raised.value.status_code == 403
        assert raised.value.message == REFUSED


async def test_a_store_outside_the_allowed_roots_reads_and_deletes_nothing(
    tmp_path: Path, allowed: Path
) -> None:
    for root in (tmp_path / "elsewhere", Path("/")):
        store = LocalArtifactStore("outside", root, real_roots([allowed]))
        for uri in (str(tmp_path / "elsewhere" / "secret.txt"), "secret.txt", "/proc/self/environ"):
            await _every_file_operation_is_refused(store, uri)
    assert (tmp_path / "elsewhere" / "secret.txt").read_text() == "secret"


async def test_a_store_whose_path_links_out_of_the_allowed_roots_is_refused(
    tmp_path: Path, allowed: Path
) -> None:
    (allowed / "to-root").symlink_to("/")
    (allowed / "to-elsewhere").symlink_to(tmp_path / "elsewhere")
    for link in ("to-root", "to-elsewhere"):
        store = LocalArtifactStore("linked", allowed / link, real_roots([allowed]))
        await _every_file_operation_is_refused(store, str(allowed / link / "secret.txt"))
        await _every_file_operation_is_refused(store, "etc/passwd")
    assert (tmp_path / "elsewhere" / "secret.txt").exists()


async def test_a_store_replaced_by_a_link_after_it_was_opened_is_refused(
    tmp_path: Path, allowed: Path
) -> None:
    (allowed / "store").mkdir()
    (allowed / "store" / "f").write_text("mine")
    store = LocalArtifactStore("swapped", allowed / "store", real_roots([allowed]))
    assert await store.read_bytes("f", limit=100) == b"mine"
    (allowed / "store" / "f").unlink()
    (allowed / "store").rmdir()
    (allowed / "store").symlink_to(tmp_path / "elsewhere")
    await _every_file_operation_is_refused(store, "secret.txt")


async def test_a_relative_store_path_is_refused(allowed: Path) -> None:
    store = LocalArtifactStore("relative", Path("."), real_roots([allowed]))
    await _every_file_operation_is_refused(store, "anything")


async def test_an_allowed_root_given_through_a_link_holds_its_stores(
    tmp_path: Path, allowed: Path
) -> None:
    (tmp_path / "alias").symlink_to(allowed)
    (allowed / "s").mkdir()
    (allowed / "s" / "f").write_text("data")
    store = LocalArtifactStore("s", allowed / "s", real_roots([tmp_path / "alias"]))
    assert await store.read_bytes("f", limit=100) == b"data"
    await store.delete("f")
    assert not (allowed / "s" / "f").exists()
