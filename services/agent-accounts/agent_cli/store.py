"""Stored logins: ``credentials.json`` (one entry per server, keyed by its normal URL)
and ``config.json`` (the selected server), in the user's config directory.

The directory is made 0700 and files are written 0600 through a temporary file and
``os.replace``, so a reader never sees half a file; writers take an exclusive lock on
``.lock`` for their read-modify-write. Reading is strict for every tool: the file must be
a regular file (not a symlink), at most 1 MiB, owned by the current user and readable by
nobody else; otherwise :class:`StoreError` says which rule it broke.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CREDENTIALS = "credentials.json"
CONFIG = "config.json"
MAX_FILE_BYTES = 1024 * 1024


class StoreError(Exception):
    """A stored file the tools refuse to read (or cannot write); the message says why."""


@dataclass
class ApiToken:
    access_token: str
    expires_at: dt.datetime
    leeway_seconds: int

    def usable(self, now: dt.datetime) -> bool:
        return now < self.expires_at - dt.timedelta(seconds=self.leeway_seconds)

    @classmethod
    def issued(cls, access_token: str, expires_in: int, now: dt.datetime) -> ApiToken:
        """Leeway: max(30 s, a twentieth of the lifetime), as kitaru's CLI."""
        return cls(
            access_token,
            now + dt.timedelta(seconds=expires_in),
            max(30, expires_in // 20),
        )


@dataclass
class Entry:
    """One server's stored login: an API key, or a session token (and, after a device
    login, the device id and code that get a new one)."""

    url: str
    api_key: str | None = None
    api_token: ApiToken | None = None
    device_id: str | None = None
    device_code: str | None = field(default=None, repr=False)

    @property
    def scheme(self) -> str:
        if self.api_key:
            return "api-key"
        if self.device_id:
            return "device"
        if self.api_token:
            return "password"
        return "none"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"url": self.url, "type": "server"}
        if self.api_key:
            data["api_key"] = self.api_key
        if self.api_token:
            data["api_token"] = {
                "access_token": self.api_token.access_token,
                "expires_at": self.api_token.expires_at.isoformat(),
                "leeway_seconds": self.api_token.leeway_seconds,
            }
        if self.device_id and self.device_code:
            data["device_id"] = self.device_id
            data["device_code"] = self.device_code
        return data

    @classmethod
    def from_json(cls, data: Any) -> Entry:
        if not isinstance(data, dict) or not isinstance(data.get("url"), str):
            raise ValueError("an entry needs a url")
        token = data.get("api_token")
        api_token = None
        if token is not None:
            expires = dt.datetime.fromisoformat(str(token["expires_at"]))
            if expires.tzinfo is None:
                expires = expires.replace(tzinfo=dt.UTC)
            api_token = ApiToken(
                str(token["access_token"]), expires, int(token.get("leeway_seconds", 30))
            )
        return cls(
            url=data["url"],
            api_key=_optional_str(data.get("api_key")),
            api_token=api_token,
            device_id=_optional_str(data.get("device_id")),
            device_code=_optional_str(data.get("device_code")),
        )


def _optional_str(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def read_private_file(path: Path) -> bytes | None:
    """The file's bytes if it follows the rules (module docstring); ``None`` if it does
    not exist. Opened without following links, then checked on the open descriptor, so
    the file checked is the file read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if path.is_symlink():
            raise StoreError(f"{path} is a symbolic link; refusing to read it") from None
        raise StoreError(f"{path} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(f"{path} is not a regular file; refusing to read it")
        if info.st_size > MAX_FILE_BYTES:
            raise StoreError(f"{path} is larger than {MAX_FILE_BYTES} bytes; refusing to read it")
        if info.st_uid != os.getuid():
            raise StoreError(f"{path} is not owned by the current user; refusing to read it")
        if info.st_mode & 0o077:
            raise StoreError(
                f"{path} is readable or writable by others (mode "
                f"{stat.S_IMODE(info.st_mode):o}); run chmod 600 on it"
            )
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise StoreError(f"{path} is larger than {MAX_FILE_BYTES} bytes; refusing to read it")
    return data


def _read_json_object(path: Path) -> dict[str, Any]:
    data = read_private_file(path)
    if data is None:
        return {}
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        raise StoreError(f"{path} is not valid JSON") from None
    if not isinstance(value, dict):
        raise StoreError(f"{path} does not hold a JSON object")
    return value


def write_private_file(path: Path, data: bytes) -> None:
    """Atomically replace ``path`` with ``data``, mode 0600 (its directory 0700)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class Store:
    """The stored logins in ``directory`` (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.credentials_path = directory / CREDENTIALS
        self.config_path = directory / CONFIG

    def entries(self) -> dict[str, Entry]:
        raw = _read_json_object(self.credentials_path)
        entries = {}
        for url, data in raw.items():
            try:
                entries[url] = Entry.from_json(data)
            except (ValueError, KeyError, TypeError):
                raise StoreError(
                    f"{self.credentials_path} has a malformed entry for {url}"
                ) from None
        return entries

    def entry(self, url: str) -> Entry | None:
        return self.entries().get(url)

    def selected(self) -> str | None:
        value = _read_json_object(self.config_path).get("server_url")
        return value if isinstance(value, str) and value else None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive among writers of this directory (readers need no lock: files are
        replaced whole)."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write_entries(self, entries: dict[str, Entry]) -> None:
        body = {url: entry.to_json() for url, entry in sorted(entries.items())}
        write_private_file(self.credentials_path, _dump(body))

    def _write_selection(self, url: str | None) -> None:
        config = _read_json_object(self.config_path)
        if url is None:
            config.pop("server_url", None)
        else:
            config["server_url"] = url
        write_private_file(self.config_path, _dump(config))

    def save(self, entry: Entry, *, select: bool) -> None:
        with self.locked():
            entries = self.entries()
            entries[entry.url] = entry
            self._write_entries(entries)
            if select:
                self._write_selection(entry.url)

    def remove(self, url: str) -> bool:
        """Forget one server's login (and the selection if it was that server)."""
        with self.locked():
            entries = self.entries()
            if entries.pop(url, None) is None:
                return False
            self._write_entries(entries)
            if self.selected() == url:
                self._write_selection(None)
            return True

    def clear(self) -> bool:
        """Delete every stored login and the selection."""
        with self.locked():
            existed = self.credentials_path.exists() or self.credentials_path.is_symlink()
            with contextlib.suppress(FileNotFoundError):
                self.credentials_path.unlink()
            if self.config_path.exists():
                self._write_selection(None)
            return existed


def _dump(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True) + "\n").encode()
