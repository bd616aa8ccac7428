"""``agent-run worker start`` and ``agent-run worker list``."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import click

from agent_cli.client import ApiClient
from agent_cli.commands import Context, run
from agent_cli.output import CliError, ExitCode
from agent_cli.session import choose_server, resolve
from agent_cli.settings import inherited_environment
from agent_cli.worker.runtime import Worker, WorkerOptions, default_name

KINDS = click.Choice(["agent", "evaluator", "importer", "analyzer"])


@click.group()
def worker() -> None:
    """Run a worker, list workers."""


@worker.command()
@click.option("--name", help="Worker name (default: host name and process id).")
@click.option(
    "--claim",
    "kinds",
    multiple=True,
    type=KINDS,
    default=["agent"],
    show_default=True,
    help="Task kinds to claim (repeatable).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 100),
    default=4,
    show_default=True,
    help="Tasks run at once.",
)
@click.option(
    "--poll-interval",
    type=click.FloatRange(0.1, 300),
    default=2.0,
    show_default=True,
    help="Seconds between claims when there is no work.",
)
@click.option(
    "--heartbeat-interval",
    type=click.FloatRange(0.1, 300),
    default=10.0,
    show_default=True,
    help="Seconds between heartbeats.",
)
@click.option(
    "--drain-timeout",
    type=click.FloatRange(0),
    default=None,
    help="On SIGTERM, seconds to let running tasks finish (default: no limit).",
)
@click.option(
    "--timeout",
    "lifetime",
    type=click.FloatRange(0.1),
    default=None,
    help="Stop claiming after this many seconds, then drain.",
)
@click.pass_obj
def start(
    obj: Context,
    name: str | None,
    kinds: tuple[str, ...],
    concurrency: int,
    poll_interval: float,
    heartbeat_interval: float,
    drain_timeout: float | None,
    lifetime: float | None,
) -> None:
    """Register with the API key and run tasks until SIGTERM (then drain).

    The API key comes from SERVICE_API_KEY or the stored login (`agent-run login URL
    --api-key-stdin`). Each task's command gets the task token as SERVICE_API_TOKEN and
    never the API key. A second SIGTERM or Ctrl-C stops running tasks at once.
    """
    options = WorkerOptions(
        name=name or default_name(),
        kinds=sorted(set(kinds)),
        concurrency=concurrency,
        poll_interval=poll_interval,
        heartbeat_interval=heartbeat_interval,
        drain_timeout=drain_timeout,
        lifetime=lifetime,
    )

    async def go() -> int:
        url = choose_server(obj.server, obj.settings, obj.store)
        key = obj.settings.api_key.get_secret_value() if obj.settings.api_key else None
        if key is None:
            entry = obj.store.entry(url)
            key = entry.api_key if entry is not None else None
        if not key:
            raise CliError(
                f"a worker needs an API key for {url}: set SERVICE_API_KEY or run "
                f"`agent-run login {url} --api-key-stdin`",
                ExitCode.AUTH,
            )
        stop, force = asyncio.Event(), asyncio.Event()

        def on_signal() -> None:
            (force if stop.is_set() else stop).set()

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_signal)
        runner = Worker(url, key, options, obj.output, inherited_environment())
        return await runner.run(stop, force)

    tasks = run(obj.output, go)
    if obj.output.json:
        obj.output.emit_json({"event": "exit", "tasks": tasks})


@worker.command(name="list")
@click.option("--all", "include_stale", is_flag=True, help="Include workers not seen lately.")
@click.pass_obj
def list_workers(obj: Context, include_stale: bool) -> None:
    """The account's view of registered workers."""

    async def go() -> list[dict[str, Any]]:
        url = choose_server(obj.server, obj.settings, obj.store)
        target = await resolve(url, obj.settings, obj.store)
        async with ApiClient(url, credential=target.credential) as api:
            return await api.list_workers(include_stale=include_stale)

    workers = run(obj.output, go)
    rows = [
        {
            "id": w["id"],
            "name": w["name"],
            "live": w["live"],
            "claims": ",".join(c["kind"] for c in w["scope"].get("claims", [])),
            "last_seen_at": w["last_seen_at"],
        }
        for w in workers
    ]
    obj.output.table(["id", "name", "live", "claims", "last_seen_at"], rows, title="Workers")
