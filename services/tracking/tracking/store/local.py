"""The local-filesystem artifact store, confined to its root.

Every path the server opens is resolved (``..`` and symbolic links followed) and must stay
inside the store's resolved root; anything else is refused before a byte is read. The
methods block (filesystem calls): call them from a worker thread.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shared.errors import DoesNotExist, Forbidden


class OutsideStore(Forbidden):
    def __init__(self, uri: str, root: Path) -> None:
        super().__init__(f"File `{uri}` is outside of artifact store bounds `{root}`.")


class MissingFile(DoesNotExist):
    def __init__(self, uri: str, store_name: str) -> None:
        super().__init__(f"File '{uri}' does not exist in artifact store '{store_name}'.")


@dataclass(frozen=True)
class Entry:
    """One member of a walked artifact: its path on disk and its name in the archive."""

    path: Path
    name: str
    is_dir: bool
    size: int


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True)
class LocalArtifactStore:
    name: str
    root: Path

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

    def exists(self, uri: str) -> bool:
        return self.resolve(uri).exists()

    def read_bytes(self, uri: str, limit: int) -> bytes:
        """A file's bytes (404 when missing or outside the root, 403 above ``limit``)."""
        try:
            path = self.resolve(uri)
        except OutsideStore:
            raise MissingFile(uri, self.name) from None
        if not path.is_file():
            raise MissingFile(uri, self.name)
        if path.stat().st_size > limit:
            raise Forbidden(f"File '{uri}' is too large to be loaded ({limit} bytes at most).")
        return path.read_bytes()

    def walk(self, uri: str) -> Iterator[Entry]:
        """``uri``'s members, as the reference archives them: the directory itself as
        ``.``, then each directory walked (relative name) followed by its files, names
        sorted. A single file is one member named ``.``. Links that lead outside the
        root are left out."""
        base = self.resolve(uri)
        root = self.root.resolve()
        if base.is_file():
            yield Entry(base, ".", False, base.stat().st_size)
            return
        for directory, dirnames, filenames in os.walk(base):
            dirnames.sort()
            here = Path(directory)
            relative = here.relative_to(base).as_posix()
            yield Entry(here, relative, True, 0)
            for filename in sorted(filenames):
                path = here / filename
                real = Path(os.path.realpath(path))
                if not _within(real, root) or not real.is_file():
                    continue
                name = filename if relative == "." else f"{relative}/{filename}"
                yield Entry(real, name, False, real.stat().st_size)

    def size(self, uri: str) -> int:
        """The bytes of a file, or of every file under a directory."""
        return sum(entry.size for entry in self.walk(uri))

    def delete(self, uri: str) -> None:
        """Remove a file or a directory tree (nothing to do when it is gone)."""
        path = self.resolve(uri)
        if path == self.root.resolve():
            raise Forbidden("The artifact store's root cannot be deleted.")
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
