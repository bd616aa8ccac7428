"""``agent-run``: log in to agent-run servers, show the login, run a worker.

Exit codes: 0 ok, 1 the server refused or failed, 2 usage, 3 not logged in or the
credential was refused, 4 the server did not answer, 5 a prompt without a terminal,
6 the stored login cannot be read or written, 130 interrupted.
"""

from __future__ import annotations

import contextlib
from typing import Any

import click

from agent_cli import __version__
from agent_cli.client import ApiClient, ApiError
from agent_cli.commands import Context, run
from agent_cli.login import login as do_login
from agent_cli.output import CliError, ExitCode, Output
from agent_cli.session import choose_server, resolve, server_url
from agent_cli.settings import CliSettings
from agent_cli.worker.command import worker

OUTPUT = click.Choice(["text", "json"])


def load_settings() -> CliSettings:
    try:
        return CliSettings()
    except ValueError as exc:
        raise click.UsageError(f"invalid environment: {exc}") from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--server", metavar="URL", help="Server to use (else SERVICE_API_URL, else the "
              "server of the last login).")  # fmt: skip
@click.option("--output", "-o", type=OUTPUT, default="text", show_default=True,
              help="text for people, json for machines.")  # fmt: skip
@click.version_option(__version__, prog_name="agent-run")
@click.pass_context
def cli(ctx: click.Context, server: str | None, output: str) -> None:
    """The agent-run server's command line."""
    ctx.obj = Context(Output(json_mode=output == "json"), load_settings(), server)


@cli.command()
@click.argument("url")
@click.option("--username", help="Log in with this user's password (prompted, hidden).")
@click.option("--password-stdin", is_flag=True, help="Read the password from stdin.")
@click.option("--api-key-stdin", is_flag=True, help="Read an API key from stdin.")
@click.option("--non-interactive", is_flag=True,
              help="No prompt, no device login (or SERVICE_NON_INTERACTIVE).")  # fmt: skip
@click.pass_obj
def login(
    obj: Context,
    url: str,
    username: str | None,
    password_stdin: bool,
    api_key_stdin: bool,
    non_interactive: bool,
) -> None:
    """Log in to URL and select it.

    Without options: the device login (a code to approve in the browser). With
    --username: a hidden password prompt. --password-stdin or --api-key-stdin read the
    secret from standard input, for scripts.
    """
    out = obj.output
    interactive = (
        out.interactive
        and not out.json
        and not non_interactive
        and not obj.settings.non_interactive
    )

    async def go() -> dict[str, Any]:
        return await do_login(
            server_url(url),
            username=username,
            password_stdin=password_stdin,
            api_key_stdin=api_key_stdin,
            interactive=interactive,
            output=out,
            store=obj.store,
        )

    result = run(out, go)
    out.message(f"Logged in to {result['server']} as {result['account']} ({result['scheme']}).")
    if out.json:
        out.result(result)


@cli.command()
@click.argument("url", required=False)
@click.option("--all", "everything", is_flag=True, help="Forget every stored login.")
@click.pass_obj
def logout(obj: Context, url: str | None, everything: bool) -> None:
    """Forget the stored login of URL (default: the selected server), or --all."""
    out = obj.output
    if everything and url:
        raise click.UsageError("give a URL or --all, not both")

    async def go() -> dict[str, Any]:
        if everything:
            return {"removed": obj.store.clear(), "server": None}
        server = server_url(url) if url else choose_server(obj.server, obj.settings, obj.store)
        entry = obj.store.entry(server)
        if entry is not None and entry.api_token is not None:
            # The session ends on the server too; the login is forgotten either way.
            async with ApiClient(server, credential=entry.api_token.access_token) as api:
                with contextlib.suppress(CliError):
                    await api.request("POST", "/api/v1/logout")
        return {"removed": obj.store.remove(server), "server": server}

    result = run(out, go)
    if out.json:
        out.result(result)
    elif result["server"] is None:
        out.message("Forgot every stored login." if result["removed"] else "No stored logins.")
    else:
        done = "Logged out of" if result["removed"] else "No stored login for"
        out.message(f"{done} {result['server']}.")


@cli.command()
@click.pass_obj
def status(obj: Context) -> None:
    """The server, the account and the credential in use (exit 3 when not logged in)."""
    out = obj.output

    async def go() -> dict[str, Any]:
        url = choose_server(obj.server, obj.settings, obj.store)
        target = await resolve(url, obj.settings, obj.store)
        async with ApiClient(url, credential=target.credential) as api:
            info = await api.info()
            result: dict[str, Any] = {
                "server": url,
                "server_version": info.get("version"),
                "auth_scheme": info["auth_scheme"],
                "scheme": target.scheme,
                "source": target.source,
                "account": None,
                "authenticated": False,
            }
            if target.credential is not None or info["auth_scheme"] == "none":
                try:
                    account = await api.me()
                    result.update(account=account["name"], authenticated=True)
                except ApiError as exc:
                    if exc.code != ExitCode.AUTH:
                        raise
                    result["error"] = exc.message
        return result

    result = run(out, go)
    out.result(result, title="agent-run")
    if not result["authenticated"]:
        raise click.exceptions.Exit(ExitCode.AUTH)


cli.add_command(worker)


def main() -> None:
    cli(prog_name="agent-run")
