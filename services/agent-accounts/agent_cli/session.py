"""Which server and which credential a command uses.

Server: ``--server``, then ``SERVICE_API_URL``, then the server the last login selected.
Credential: ``SERVICE_API_TOKEN``, then ``SERVICE_API_KEY`` (both override what is
stored), then the stored login for that server: its API key, or its session token,
renewed with the device code after a device login once it is about to expire.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from agent_cli.client import ApiClient, ApiError
from agent_cli.output import CliError, ExitCode
from agent_cli.settings import CliSettings
from agent_cli.store import ApiToken, Entry, Store
from agent_cli.urls import UrlError, normalize_server_url


@dataclass(frozen=True)
class Target:
    url: str
    credential: str | None
    scheme: str
    """``api-key``, ``password``, ``device``, ``token`` or ``none``."""
    source: str
    """Where the credential came from: an environment variable or ``stored``."""


def server_url(raw: str) -> str:
    try:
        return normalize_server_url(raw)
    except UrlError as exc:
        raise CliError(str(exc), ExitCode.USAGE) from None


def choose_server(option: str | None, settings: CliSettings, store: Store) -> str:
    raw = option or settings.api_url or store.selected()
    if not raw:
        raise CliError(
            "no server selected: run `agent-run login URL`, or pass --server or set "
            "SERVICE_API_URL",
            ExitCode.AUTH,
        )
    return server_url(raw)


async def resolve(url: str, settings: CliSettings, store: Store) -> Target:
    if settings.api_token is not None:
        return Target(url, settings.api_token.get_secret_value(), "token", "SERVICE_API_TOKEN")
    if settings.api_key is not None:
        return Target(url, settings.api_key.get_secret_value(), "api-key", "SERVICE_API_KEY")
    entry = store.entry(url)
    if entry is None:
        return Target(url, None, "none", "none")
    if entry.api_key:
        return Target(url, entry.api_key, "api-key", "stored")
    now = dt.datetime.now(dt.UTC)
    if entry.api_token is not None and entry.api_token.usable(now):
        return Target(url, entry.api_token.access_token, entry.scheme, "stored")
    if entry.device_id and entry.device_code:
        token = await refresh_device_session(entry, store)
        return Target(url, token, "device", "stored")
    if entry.api_token is not None:
        raise CliError(
            f"the stored session for {url} has expired: run `agent-run login {url}`",
            ExitCode.AUTH,
        )
    return Target(url, None, "none", "stored")


async def refresh_device_session(entry: Entry, store: Store) -> str:
    """A new session token from the device code (the device stays the credential until
    it is locked, deleted or expires), stored for the next command."""
    assert entry.device_id is not None
    assert entry.device_code is not None
    async with ApiClient(entry.url) as api:
        try:
            issued = await api.device_token(entry.device_id, entry.device_code)
        except ApiError as exc:
            if exc.status >= 500:
                raise
            raise CliError(
                f"the device login for {entry.url} has ended ({exc.message}): run "
                f"`agent-run login {entry.url}`",
                ExitCode.AUTH,
            ) from None
    entry.api_token = ApiToken.issued(
        issued["access_token"], int(issued["expires_in"]), dt.datetime.now(dt.UTC)
    )
    store.save(entry, select=False)
    return entry.api_token.access_token
