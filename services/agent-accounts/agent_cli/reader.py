"""``agent-run-read``: a read-only client of the login that ``agent-run login`` stored.

It only reads: the stored files (which it refuses unless they are regular files, at most
1 MiB, owned by the user and private to them) and the server, with GET requests. It talks
HTTPS, or cleartext HTTP only to a loopback address (localhost, 127.0.0.0/8, ::1), never
follows a redirect, ignores proxy settings, and takes its credential from the stored
login alone: ``SERVICE_API_TOKEN`` and ``SERVICE_API_KEY`` are not read. An expired
session is not renewed here (that would write the store): log in again with
``agent-run``. Exit codes are those of ``agent-run``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

import click

from agent_cli import __version__
from agent_cli.client import ApiClient
from agent_cli.commands import run
from agent_cli.output import CliError, ExitCode, Output
from agent_cli.settings import ClientSettings
from agent_cli.store import Store
from agent_cli.urls import read_only_url


@dataclass
class Reader:
    output: Output
    server: str | None
    settings: ClientSettings

    def url(self, store: Store) -> str:
        raw = self.server or self.settings.api_url or store.selected()
        if not raw:
            raise CliError("no server selected: log in with `agent-run login URL` first",
                           ExitCode.AUTH)  # fmt: skip
        return read_only_url(raw)

    def client(self) -> tuple[ApiClient, str]:
        """A client for the selected server with its stored credential."""
        store = Store(self.settings.credentials_dir())
        url = self.url(store)
        entry = store.entry(url)
        if entry is None:
            raise CliError(f"no stored login for {url}: run `agent-run login {url}`",
                           ExitCode.AUTH)  # fmt: skip
        credential = entry.api_key
        if credential is None and entry.api_token is not None:
            if not entry.api_token.usable(dt.datetime.now(dt.UTC)):
                raise CliError(f"the stored session for {url} has expired: run "
                               f"`agent-run status` or `agent-run login {url}`",
                               ExitCode.AUTH)  # fmt: skip
            credential = entry.api_token.access_token
        return ApiClient(url, credential=credential, trust_env=False), entry.scheme


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--server", metavar="URL", help="A server with a stored login (else "
              "SERVICE_API_URL, else the selected one).")  # fmt: skip
@click.option("--output", "-o", type=click.Choice(["text", "json"]), default="text",
              show_default=True)  # fmt: skip
@click.version_option(__version__, prog_name="agent-run-read")
@click.pass_context
def cli(ctx: click.Context, server: str | None, output: str) -> None:
    """Read-only views of an agent-run server, with the stored login."""
    try:
        settings = ClientSettings()
    except ValueError as exc:
        raise click.UsageError(f"invalid environment: {exc}") from None
    ctx.obj = Reader(Output(json_mode=output == "json"), server, settings)


@cli.command()
@click.pass_obj
def status(reader: Reader) -> None:
    """The server, the account and the stored credential's scheme."""

    async def go() -> dict[str, Any]:
        api, scheme = reader.client()
        async with api:
            info = await api.info()
            account = await api.me()
        return {
            "server": api.base_url,
            "server_version": info.get("version"),
            "auth_scheme": info["auth_scheme"],
            "account": account["name"],
            "scheme": scheme,
        }

    reader.output.result(run(reader.output, go), title="agent-run")


@cli.command()
@click.option("--all", "include_stale", is_flag=True, help="Include workers not seen lately.")
@click.pass_obj
def workers(reader: Reader, include_stale: bool) -> None:
    """Registered workers."""

    async def go() -> list[dict[str, Any]]:
        api, _ = reader.client()
        async with api:
            return await api.list_workers(include_stale=include_stale)

    rows = [
        {"id": w["id"], "name": w["name"], "live": w["live"], "last_seen_at": w["last_seen_at"]}
        for w in run(reader.output, go)
    ]
    reader.output.table(["id", "name", "live", "last_seen_at"], rows, title="Workers")


@cli.command()
@click.argument("task_id", type=click.UUID)
@click.pass_obj
def task(reader: Reader, task_id: uuid.UUID) -> None:
    """One task: its status, attempt, error and result."""

    async def go() -> dict[str, Any]:
        api, _ = reader.client()
        async with api:
            return await api.get_task(str(task_id))

    found = run(reader.output, go)
    fields = ("id", "kind", "status", "attempt", "worker_id", "started_at", "ended_at",
              "error", "result")  # fmt: skip
    reader.output.result({k: found.get(k) for k in fields}, title="Task")


def main() -> None:
    cli(prog_name="agent-run-read")
