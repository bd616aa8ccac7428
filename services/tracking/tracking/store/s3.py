"""An S3 (or S3-compatible) artifact store, confined to its bucket and prefix.

A version's URI is ``s3://bucket/key``; it is inside the store when its bucket is the
store's and its key is the store's prefix or lies under it segment by segment
(``s3://b/store2`` is not inside ``s3://b/store``). ``.`` and ``..`` segments are refused
rather than interpreted. S3 has no directories: a "directory" is the objects whose keys
continue its key with ``/``.

The client is ``obstore`` (Rust's ``object_store``): its coroutines run on its own runtime,
so nothing here blocks the event loop, and an object's body is pulled in chunks as the
response is sent. Every client connects through the process's
:class:`~tracking.store.egress.EgressProxy` (which refuses internal addresses) and signs
with the store's own credentials or not at all; every failure is one generic 502.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import obstore
from obstore.exceptions import BaseError
from obstore.store import S3Store

from shared.errors import BadRequest, PlatformError
from tracking.component.flavors import s3_endpoint
from tracking.store.base import (
    CHUNK,
    ArtifactStore,
    Entry,
    MissingFile,
    OutsideStore,
    RootNotDeletable,
    TooLarge,
)

log = logging.getLogger(__name__)

SCHEME = "s3://"
LIST_CHUNK = 1000  # S3's page size and its bulk delete's batch


class StoreFailed(PlatformError):
    """A request to the store failed, whatever the cause: 502 with one sentence, the same
    for a refused address, a closed port, a server that does not speak HTTP, a timeout or
    refused credentials, and the same for every store, so the answer tells a caller
    nothing about the network behind the server. The cause goes to the log."""

    status_code = 502

    def __init__(self) -> None:
        super().__init__("The server could not complete the request to the artifact store.")


def _reason(exc: BaseError) -> str:
    # obstore's messages span lines of debug output; the first says what happened.
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return first[:300]


def split_path(path: str) -> tuple[str, str]:
    """``s3://bucket/a/b/`` → ``("bucket", "a/b")``."""
    bucket, _, prefix = path.removeprefix(SCHEME).partition("/")
    return bucket, prefix.strip("/")


@dataclass(frozen=True)
class S3Options:
    """How the server reaches S3 stores (the settings), applied to every store.
    ``proxy_url`` is the :class:`~tracking.store.egress.EgressProxy` every request goes
    through."""

    connect_timeout: timedelta
    request_timeout: timedelta
    retries: int
    proxy_url: str


def s3_client(
    configuration: dict[str, Any], secrets: dict[str, str], options: S3Options
) -> S3Store:
    """An ``obstore`` client for an s3 artifact store's configuration (see
    docs/artifact-stores.md for which fields it honours).

    It signs with the store's own ``key``/``secret``/``token`` or, without them, not at
    all: obstore's own credential chain (environment variables, files, web identity,
    container and instance metadata) would lend the server's credentials to whoever
    registered the store, so it is never consulted. 400 for an ``endpoint_url`` that is
    not ``http[s]://host[:port][/path]`` (one stored before that rule)."""
    bucket, _ = split_path(configuration["path"])
    client_kwargs = configuration.get("client_kwargs") or {}
    config_kwargs = configuration.get("config_kwargs") or {}
    operation_kwargs = configuration.get("s3_additional_kwargs") or {}
    config: dict[str, Any] = {}
    endpoint = client_kwargs.get("endpoint_url")
    if endpoint:
        try:
            config["endpoint"] = s3_endpoint(endpoint)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
    region = client_kwargs.get("region_name") or config_kwargs.get("region_name")
    if region:
        config["region"] = str(region)
    credential_provider = None
    if "key" in secrets and "secret" in secrets:
        credential: dict[str, Any] = {
            "access_key_id": secrets["key"],
            "secret_access_key": secrets["secret"],
            "token": secrets.get("token"),
            "expires_at": None,
        }
        credential_provider = lambda: credential  # noqa: E731
    else:
        config["skip_signature"] = True
    style = (config_kwargs.get("s3") or {}).get("addressing_style")
    if style in ("virtual", "path"):
        config["virtual_hosted_style_request"] = style == "virtual"
    if str(operation_kwargs.get("RequestPayer", "")).lower() == "requester":
        config["request_payer"] = True
    connect_timeout = options.connect_timeout
    if isinstance(config_kwargs.get("connect_timeout"), int | float):
        connect_timeout = timedelta(seconds=config_kwargs["connect_timeout"])
    client_options: dict[str, Any] = {
        "allow_http": bool(endpoint) and str(endpoint).startswith("http://"),
        "connect_timeout": connect_timeout,
        "timeout": options.request_timeout,
        "proxy_url": options.proxy_url,
    }
    if client_kwargs.get("verify") is False:
        client_options["allow_invalid_certificates"] = True
    retry_config: dict[str, Any] = {
        "max_retries": options.retries,
        "retry_timeout": (connect_timeout + timedelta(seconds=1)) * (options.retries + 1),
    }
    return S3Store(
        bucket,
        config=config,  # type: ignore[arg-type]
        client_options=client_options,  # type: ignore[arg-type]
        retry_config=retry_config,  # type: ignore[arg-type]
        credential_provider=credential_provider,  # type: ignore[arg-type]
    )


class S3ArtifactStore(ArtifactStore):
    def __init__(self, name: str, path: str, client: S3Store) -> None:
        self.name = name
        self.path = path
        self.bucket, self.prefix = split_path(path)
        self.client = client

    @contextmanager
    def _failures(self) -> Iterator[None]:
        """The client's errors as the platform's (a missing object, which the client
        raises as ``FileNotFoundError``, passes through)."""
        try:
            yield
        except BaseError as exc:
            log.warning("artifact store %r failed: %s", self.name, _reason(exc))
            raise StoreFailed() from None

    def key(self, uri: str) -> str:
        """The object key of ``uri`` (403 when it is not inside the store)."""
        if not uri.startswith(SCHEME) or "\x00" in uri:
            raise OutsideStore(uri, self.path)
        bucket, _, key = uri.removeprefix(SCHEME).partition("/")
        key = key.strip("/")
        segments = key.split("/") if key else []
        if bucket != self.bucket or any(s in ("", ".", "..") for s in segments):
            raise OutsideStore(uri, self.path)
        if self.prefix and not (key == self.prefix or key.startswith(self.prefix + "/")):
            raise OutsideStore(uri, self.path)
        return key

    async def check(self, uri: str) -> None:
        self.key(uri)

    async def _object_size(self, key: str) -> int | None:
        """The size of the object at ``key``; ``None`` when there is none."""
        if not key:
            return None
        try:
            with self._failures():
                meta = await obstore.head_async(self.client, key)
        except FileNotFoundError:
            return None
        return meta["size"]

    async def _objects(self, key: str) -> AsyncGenerator[list[tuple[str, int]], None]:
        """(key, size) of the objects under ``key`` (a directory), a page at a time."""
        below = f"{key}/" if key else ""
        with self._failures():
            pages = obstore.list(self.client, prefix=key or None, chunk_size=LIST_CHUNK)
            async for page in pages:
                # object_store matches prefixes by segment already; the check keeps a
                # sibling such as `key2/…` out whatever the server answers.
                yield [(m["path"], m["size"]) for m in page if m["path"].startswith(below)]

    async def exists(self, uri: str) -> bool:
        key = self.key(uri)
        if await self._object_size(key) is not None:
            return True
        async with aclosing(self._objects(key)) as pages:
            async for page in pages:
                if page:
                    return True
        return False

    async def read_bytes(self, uri: str, limit: int) -> bytes:
        try:
            key = self.key(uri)
        except OutsideStore:
            raise MissingFile(uri, self.name) from None
        if not key:
            raise MissingFile(uri, self.name)
        try:
            with self._failures():
                result = await obstore.get_async(self.client, key)
                if result.meta["size"] > limit:
                    raise TooLarge(uri, limit)
                return bytes(await result.bytes_async())
        except FileNotFoundError:
            raise MissingFile(uri, self.name) from None

    async def walk(self, uri: str) -> AsyncIterator[Entry]:
        key = self.key(uri)
        size = await self._object_size(key)
        if size is not None:
            yield Entry(".", False, size, key)
            return
        # The listing comes in key order; the archive wants each directory's files before
        # its subdirectories, so the keys (not the data) are gathered first.
        files: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
        children: dict[str, set[str]] = defaultdict(set)
        found = False
        async for page in self._objects(key):
            for path, object_size in page:
                found = True
                relative = path[len(key) + 1 :] if key else path
                parts = relative.split("/")
                parent = "."
                for part in parts[:-1]:
                    if not part:
                        break
                    here = part if parent == "." else f"{parent}/{part}"
                    children[parent].add(here)
                    parent = here
                else:
                    if parts[-1]:  # a "directory marker" object (`a/`) has no name
                        files[parent].append((parts[-1], object_size, path))
        if not found:
            return
        pending = ["."]
        while pending:
            directory = pending.pop()
            yield Entry(directory, True, 0, directory)
            for name, object_size, path in sorted(files[directory]):
                member = name if directory == "." else f"{directory}/{name}"
                yield Entry(member, False, object_size, path)
            pending.extend(sorted(children[directory], reverse=True))

    async def chunks(self, entry: Entry) -> AsyncGenerator[bytes, None]:
        with self._failures():
            result = await obstore.get_async(self.client, entry.location)
            async for chunk in result.stream(min_chunk_size=CHUNK):
                yield chunk

    async def delete(self, uri: str) -> None:
        key = self.key(uri)
        if key == self.prefix:
            raise RootNotDeletable()
        with self._failures():
            if await self._object_size(key) is not None:
                await obstore.delete_async(self.client, key)
            async for page in self._objects(key):
                if page:
                    await obstore.delete_async(self.client, [path for path, _ in page])
