"""``agent-run login``: the password, API key and device logins, and what they store."""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
from typing import Any, TextIO

import click

from agent_cli.client import ApiClient, ApiError
from agent_cli.output import CliError, ExitCode, Output
from agent_cli.store import ApiToken, Entry, Store


def read_secret_line(stream: TextIO, what: str) -> str:
    """One line of ``stream`` without its line ending; empty is refused."""
    line = stream.readline().removesuffix("\n").removesuffix("\r")
    if not line:
        raise CliError(f"no {what} on standard input", ExitCode.USAGE)
    return line


def _session(issued: dict[str, Any]) -> ApiToken:
    return ApiToken.issued(
        issued["access_token"], int(issued["expires_in"]), dt.datetime.now(dt.UTC)
    )


async def login(
    url: str,
    *,
    username: str | None,
    password_stdin: bool,
    api_key_stdin: bool,
    interactive: bool,
    output: Output,
    store: Store,
    stdin: TextIO = sys.stdin,
) -> dict[str, Any]:
    """Log in to ``url``, store the credential and select the server; the result names
    the server, the account and the scheme."""
    if password_stdin and api_key_stdin:
        raise CliError("give --password-stdin or --api-key-stdin, not both", ExitCode.USAGE)
    if password_stdin and not username:
        raise CliError("--password-stdin needs --username", ExitCode.USAGE)
    async with ApiClient(url) as api:
        info = await api.info()
        entry = Entry(url)
        if api_key_stdin:
            entry.api_key = read_secret_line(stdin, "API key")
            # The api-key grant checks the key; the key itself is what is stored.
            await api.login_api_key(entry.api_key)
        elif password_stdin:
            assert username is not None
            password = read_secret_line(stdin, "password")
            entry.api_token = _session(await api.login_password(username, password))
        elif info["auth_scheme"] == "none" and not username:
            pass  # every request runs as the server's default account
        elif not interactive:
            raise CliError(
                "an interactive login needs a terminal: use --username U --password-stdin "
                "or --api-key-stdin",
                ExitCode.INTERACTION_REQUIRED,
            )
        elif username:
            password = click.prompt("Password", hide_input=True, err=True)
            if not password:
                raise CliError("an empty password was given", ExitCode.USAGE)
            entry.api_token = _session(await api.login_password(username, password))
        else:
            await _device_login(api, entry, output)
    credential = entry.api_key or (entry.api_token.access_token if entry.api_token else None)
    async with ApiClient(url, credential=credential) as api:
        account = await api.me()
    store.save(entry, select=True)
    return {"server": url, "account": account["name"], "scheme": entry.scheme}


async def _device_login(api: ApiClient, entry: Entry, output: Output) -> None:
    """RFC 8628: show the code and where to approve it, then poll until approved."""
    flow = await api.device_authorization()
    output.out.print(
        f"Open {flow['verification_uri_complete']}\n"
        f"(or {flow['verification_uri']}) and confirm the code {flow['user_code']}."
    )
    interval = max(1, int(flow.get("interval", 5)))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + int(flow.get("expires_in", 300))
    with output.waiting("Waiting for the device to be approved..."):
        while True:
            await asyncio.sleep(interval)
            try:
                issued = await api.device_token(str(flow["device_id"]), flow["device_code"])
                break
            except ApiError as exc:
                if exc.error == "authorization_pending" and loop.time() < deadline:
                    continue
                if exc.error == "slow_down":
                    interval += 5
                    continue
                if exc.error in ("authorization_pending", "expired_token"):
                    raise CliError(
                        "the code expired before it was approved: run the login again",
                        ExitCode.AUTH,
                    ) from None
                if exc.error == "access_denied":
                    raise CliError(f"the login was refused: {exc.message}", ExitCode.AUTH) from None
                raise
    entry.api_token = _session(issued)
    entry.device_id = str(flow["device_id"])
    entry.device_code = flow["device_code"]
