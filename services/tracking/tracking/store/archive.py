"""A ``.tar.gz`` of an artifact, produced chunk by chunk in constant memory.

``tarfile`` would copy each member whole into its output before returning; here each
member's header, data (as its store's chunks) and padding go through one gzip compressor,
so at most one chunk and the compressor's window are held, whatever the artifact's size.
Every member is written with exactly the size its entry announced (cut, or padded with
zeros, if the data changed since the walk), so what was checked against the download limit
is what is sent.
"""

from __future__ import annotations

import asyncio
import tarfile
import zlib
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing

from tracking.store.base import CHUNK, ArtifactStore, Entry

BLOCK = tarfile.BLOCKSIZE
_GZIP = 16 + zlib.MAX_WBITS


def _header(entry: Entry) -> bytes:
    info = tarfile.TarInfo(entry.name)
    info.mtime = 0
    if entry.is_dir:
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
    else:
        info.size = entry.size
        info.mode = 0o644
    return info.tobuf(tarfile.PAX_FORMAT)


async def _data(store: ArtifactStore, entry: Entry) -> AsyncIterator[bytes]:
    """The entry's bytes, exactly ``entry.size`` of them, padded to a whole block."""
    remaining = entry.size
    async with aclosing(store.chunks(entry)) as chunks:
        async for chunk in chunks:
            if remaining <= 0:
                break
            piece = chunk[:remaining]
            remaining -= len(piece)
            yield piece
    while remaining > 0:
        zeros = min(CHUNK, remaining)
        remaining -= zeros
        yield b"\0" * zeros
    yield b"\0" * (-entry.size % BLOCK)


async def _tar(store: ArtifactStore, entries: Iterable[Entry]) -> AsyncIterator[bytes]:
    written = 0
    for entry in entries:
        header = _header(entry)
        written += len(header)
        yield header
        if entry.is_dir:
            continue
        async for piece in _data(store, entry):
            written += len(piece)
            yield piece
    end = 2 * BLOCK
    end += -(written + end) % tarfile.RECORDSIZE
    yield b"\0" * end


async def tar_gz(store: ArtifactStore, entries: Iterable[Entry]) -> AsyncIterator[bytes]:
    """The gzip-compressed tar of ``entries`` (walked from ``store``), as chunks.
    Compressing a chunk takes about a millisecond, so it runs in a worker thread."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, _GZIP)
    async for piece in _tar(store, entries):
        if len(piece) > BLOCK:
            compressed = await asyncio.to_thread(compressor.compress, piece)
        else:
            compressed = compressor.compress(piece)
        if compressed:
            yield compressed
    yield compressor.flush()
