"""Secrets the local stack generates once and keeps under its data dir.

The server id, each service's client secret and the per-service generated values (the
Fernet key that encrypts identity's signing keys, ...) must survive restarts: a new
Fernet key would make stored signing keys unreadable, a new server id would rename the
login cookie. They live in ``<data dir>/secrets.json`` with mode 0600 and are never
printed. A service added to the stack later gets its values on the next start.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import stat
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploy.config import SecretKind, Stack

FILE_NAME = "secrets.json"
_VERSION = 1


class SecretsError(Exception):
    """The secrets file exists but cannot be used."""


def _fernet_key() -> str:
    # The exact format of cryptography's Fernet.generate_key(), without importing it here.
    return base64.urlsafe_b64encode(os.urandom(32)).decode("ascii")


def _token() -> str:
    return secrets.token_urlsafe(32)


GENERATORS: dict[SecretKind, Callable[[], str]] = {"fernet": _fernet_key, "token": _token}


@dataclass
class StackSecrets:
    """The stack's persisted secrets; ``repr`` shows no values."""

    server_id: str
    clients: dict[str, str] = field(repr=False)
    """Client id (the owning service's name) → client secret, for every non-issuer."""
    generated: dict[str, dict[str, str]] = field(repr=False)
    """Owning service name → environment variable → generated value."""


def load_or_create(data_dir: Path, stack: Stack) -> tuple[StackSecrets, list[str]]:
    """Read ``secrets.json`` and add whatever the stack needs that is missing.

    Returns the secrets and human-readable notes (what was created or repaired),
    which contain no secret values.
    """
    path = data_dir / FILE_NAME
    notes: list[str] = []
    existed = path.exists()
    if existed:
        current = _read(path)
        if stat.S_IMODE(path.stat().st_mode) & 0o077:
            path.chmod(0o600)
            notes.append(f"{path} was readable by others; its mode is now 0600")
    else:
        current = StackSecrets(server_id=str(uuid.uuid4()), clients={}, generated={})
    added = _complete(current, stack)
    if not existed:
        _write(path, current)
        notes.append(f"generated a server id and service credentials in {path}")
    elif added:
        _write(path, current)
        notes.append(f"generated credentials for {', '.join(sorted(added))} in {path}")
    return current, notes


def _complete(current: StackSecrets, stack: Stack) -> set[str]:
    """Generate the missing values in place; return the names of services that got some."""
    added: set[str] = set()
    for service in stack.web_services:
        if not service.issuer and service.name not in current.clients:
            current.clients[service.name] = _token()
            added.add(service.name)
    for service in stack.services:
        values = current.generated.setdefault(service.owner, {})
        for var, kind in service.secrets.items():
            if var not in values:
                values[var] = GENERATORS[kind]()
                added.add(service.owner)
    return added


def _read(path: Path) -> StackSecrets:
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("version") != _VERSION:
            raise ValueError(f"unknown version {raw.get('version')!r}")
        uuid.UUID(raw["server_id"])
        result = StackSecrets(
            server_id=str(raw["server_id"]),
            clients={str(k): str(v) for k, v in raw["clients"].items()},
            generated={
                str(owner): {str(k): str(v) for k, v in values.items()}
                for owner, values in raw["generated"].items()
            },
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        # The message names the problem, never the content.
        raise SecretsError(
            f"{path} is unreadable ({type(exc).__name__}); fix it or delete it to start over "
            "(tokens, and data encrypted with the old keys, are then lost)"
        ) from None
    return result


def _write(path: Path, value: StackSecrets) -> None:
    """Write atomically, created with mode 0600 so the values are never world-readable."""
    body = json.dumps(
        {
            "version": _VERSION,
            "server_id": value.server_id,
            "clients": value.clients,
            "generated": value.generated,
        },
        indent=2,
        sort_keys=True,
    )
    tmp = path.with_name(f".{path.name}.tmp")
    # A leftover temp file would keep its old mode through O_CREAT.
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(body + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
