"""The local-filesystem artifact store, confined to its root and to the operator's roots.

Every path the server opens is resolved (``..`` and symbolic links followed) and must stay
inside the store's resolved root, and that inside one of the roots the operator allowed
(``LOCAL_ARTIFACT_STORE_ROOTS``): a user chooses a store's path, the operator chooses
where the server's own disk may be read. Anything else is refused before a byte is read
or deleted; the root is resolved again on every access, so a store whose path is later
replaced by a link out of the allowed roots is refused too. The filesystem calls run in
worker threads: the sync helpers (``resolve``, ``_walk`` …) are what they run.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from pathlib import Path

from starlette.concurrency import iterate_in_threadpool

from tracking.store.base import (
    CHUNK,
    ArtifactStore,
    Entry,
    LocalFilesRefused,
    MissingFile,
    OutsideStore,
    RootNotDeletable,
    TooLarge,
)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def real_roots(roots: Sequence[Path]) -> tuple[Path, ...]:
    """The operator's roots with their links resolved, as paths are compared with them."""
    return tuple(Path(os.path.realpath(root)) for root in roots)


class LocalArtifactStore(ArtifactStore):
    def __init__(self, name: str, root: Path, allowed: Sequence[Path]) -> None:
        """``allowed``: the operator's roots, resolved (:func:`real_roots`)."""
        self.name = name
        self.root = root
        self.allowed = tuple(allowed)

    def real_root(self) -> Path:
        """The store's root, resolved (403 :class:`LocalFilesRefused` outside every
        allowed root)."""
        if "\x00" in str(self.root):
            raise LocalFilesRefused()
        root = Path(os.path.realpath(self.root))
        if not self.root.is_absolute() or not any(_within(root, a) for a in self.allowed):
            raise LocalFilesRefused()
        return root

    def resolve(self, uri: str) -> Path:
        """The real path of ``uri`` (403 when it leaves the root, through ``..`` or a link,
        or when the root is not inside an allowed one)."""
        root = self.real_root()
        if "\x00" in uri:
            raise OutsideStore(uri, self.root)
        path = Path(uri)
        if not path.is_absolute():
            path = root / path
        real = Path(os.path.realpath(path))
        if not _within(real, root):
            raise OutsideStore(uri, self.root)
        return real

    async def check(self, uri: str) -> None:
        await asyncio.to_thread(self.resolve, uri)

    async def exists(self, uri: str) -> bool:
        return await asyncio.to_thread(lambda: self.resolve(uri).exists())

    def _read_bytes(self, uri: str, limit: int) -> bytes:
        try:
            path = self.resolve(uri)
        except OutsideStore:
            raise MissingFile(uri, self.name) from None
        if not path.is_file():
            raise MissingFile(uri, self.name)
        if path.stat().st_size > limit:
            raise TooLarge(uri, limit)
        return path.read_bytes()

    async def read_bytes(self, uri: str, limit: int) -> bytes:
        return await asyncio.to_thread(self._read_bytes, uri, limit)

    def _walk(self, uri: str) -> Iterator[Entry]:
        # Links that lead outside the root are left out.
        base = self.resolve(uri)
        root = self.real_root()
        if base.is_file():
            yield Entry(".", False, base.stat().st_size, str(base))
            return
        for directory, dirnames, filenames in os.walk(base):
            dirnames.sort()
            here = Path(directory)
            relative = here.relative_to(base).as_posix()
            yield Entry(relative, True, 0, str(here))
            for filename in sorted(filenames):
                real = Path(os.path.realpath(here / filename))
                if not _within(real, root) or not real.is_file():
                    continue
                name = filename if relative == "." else f"{relative}/{filename}"
                yield Entry(name, False, real.stat().st_size, str(real))

    def walk(self, uri: str) -> AsyncIterator[Entry]:
        return iterate_in_threadpool(self._walk(uri))

    async def chunks(self, entry: Entry) -> AsyncGenerator[bytes, None]:
        data = await asyncio.to_thread(open, entry.location, "rb")
        try:
            while chunk := await asyncio.to_thread(data.read, CHUNK):
                yield chunk
        finally:
            data.close()

    def _delete(self, uri: str) -> None:
        path = self.resolve(uri)
        if path == self.real_root():
            raise RootNotDeletable()
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()

    async def delete(self, uri: str) -> None:
        await asyncio.to_thread(self._delete, uri)
