"""What every artifact store offers the server, whatever holds the bytes.

The service reads artifact data only through :class:`ArtifactStore`: confinement to the
store's root, existence, a bounded read, a walk of an artifact's members, each member's
bytes as a stream of chunks, and deletion. Every method is a coroutine (or an async
iterator) that never blocks the event loop: the local store hops to a worker thread for
filesystem calls, the S3 store awaits its client.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from shared.errors import DoesNotExist, Forbidden

CHUNK = 64 * 1024
"""The size of the pieces a member's bytes are read in."""


class OutsideStore(Forbidden):
    def __init__(self, uri: str, root: object) -> None:
        super().__init__(f"File `{uri}` is outside of artifact store bounds `{root}`.")


class LocalFilesRefused(Forbidden):
    """A local store outside every root the operator allowed (its files, or a path one of
    its links leads to): the reference's answer when a server may not read local files."""

    def __init__(self) -> None:
        super().__init__("Files in a local artifact store cannot be accessed from the server.")


class MissingFile(DoesNotExist):
    def __init__(self, uri: str, store_name: str) -> None:
        super().__init__(f"File '{uri}' does not exist in artifact store '{store_name}'.")


class TooLarge(Forbidden):
    def __init__(self, uri: str, limit: int) -> None:
        super().__init__(f"File '{uri}' is too large to be loaded ({limit} bytes at most).")


class RootNotDeletable(Forbidden):
    def __init__(self) -> None:
        super().__init__("The artifact store's root cannot be deleted.")


@dataclass(frozen=True)
class Entry:
    """One member of a walked artifact: its name in the archive and where its bytes are
    (a real path or an object key, for the store that walked it)."""

    name: str
    is_dir: bool
    size: int
    location: str


class ArtifactStore(ABC):
    """An artifact store the server reads (and deletes from), confined to its root."""

    name: str

    @abstractmethod
    async def check(self, uri: str) -> None:
        """403 :class:`OutsideStore` unless ``uri`` is inside the store's root."""

    @abstractmethod
    async def exists(self, uri: str) -> bool:
        """Whether ``uri`` is a file or a directory with members (403 outside the root)."""

    @abstractmethod
    async def read_bytes(self, uri: str, limit: int) -> bytes:
        """A file's bytes (404 when missing or outside the root, 403 above ``limit``)."""

    @abstractmethod
    def walk(self, uri: str) -> AsyncIterator[Entry]:
        """``uri``'s members as the reference archives them: the directory itself as
        ``.``, then each directory walked (relative name) followed by its files, names
        sorted. A single file is one member named ``.``; nothing there, no member."""

    @abstractmethod
    def chunks(self, entry: Entry) -> AsyncGenerator[bytes, None]:
        """A walked file's bytes, in pieces of about :data:`CHUNK`."""

    @abstractmethod
    async def delete(self, uri: str) -> None:
        """Remove a file or everything under a directory (nothing to do when gone);
        the root itself is refused."""

    async def size(self, uri: str) -> int:
        """The bytes of a file, or of every file under a directory."""
        return sum([entry.size async for entry in self.walk(uri)])
