"""The local-filesystem artifact store, confined to its root.

Every path the server opens is resolved (``..`` and symbolic links followed) and must stay
inside the store's resolved root; anything else is refused before a byte is read. The
filesystem calls run in worker threads: the sync helpers (``resolve``, ``_walk`` …)
are what they run.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from pathlib import Path

from starlette.concurrency import iterate_in_threadpool

from tracking.store.base import (
    CHUNK,
    ArtifactStore,
    Entry,
    MissingFile,
    OutsideStore,
    RootNotDeletable,
    TooLarge,
)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class LocalArtifactStore(ArtifactStore):
    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root

    def resolve(self, uri: str) -> Path:
        """The real path of ``uri`` (403 when it leaves the root, through ``..`` or a link)."""
        if "\x00" in uri:
            raise OutsideStore(uri, self.root)
        root = self.root.resolve()
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
        root = self.root.resolve()
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
        if path == self.root.resolve():
            raise RootNotDeletable()
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()

    async def delete(self, uri: str) -> None:
        await asyncio.to_thread(self._delete, uri)
