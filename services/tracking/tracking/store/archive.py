"""A ``.tar.gz`` of an artifact, produced chunk by chunk in constant memory.

``tarfile`` would copy each member whole into its output before returning; here each
member's header, data (read in blocks) and padding go through one gzip compressor, so at
most one block and the compressor's window are held, whatever the artifact's size.
"""

from __future__ import annotations

import tarfile
import zlib
from collections.abc import Iterable, Iterator

from tracking.store.local import Entry

BLOCK = tarfile.BLOCKSIZE
CHUNK = 64 * 1024
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


def _tar(entries: Iterable[Entry]) -> Iterator[bytes]:
    written = 0
    for entry in entries:
        header = _header(entry)
        written += len(header)
        yield header
        if entry.is_dir:
            continue
        remaining = entry.size
        with entry.path.open("rb") as data:
            # Exactly the size the header announced, even if the file changes meanwhile.
            while remaining > 0:
                chunk = data.read(min(CHUNK, remaining))
                if not chunk:
                    chunk = b"\0" * min(CHUNK, remaining)
                remaining -= len(chunk)
                written += len(chunk)
                yield chunk
        padding = -entry.size % BLOCK
        written += padding
        yield b"\0" * padding
    end = 2 * BLOCK
    end += -(written + end) % tarfile.RECORDSIZE
    yield b"\0" * end


def tar_gz(entries: Iterable[Entry]) -> Iterator[bytes]:
    """The gzip-compressed tar of ``entries``, as chunks."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, _GZIP)
    for piece in _tar(entries):
        compressed = compressor.compress(piece)
        if compressed:
            yield compressed
    yield compressor.flush()
