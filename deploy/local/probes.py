"""Small checks the launcher waits on: free ports, Valkey's PING, HTTP readiness."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable

import httpx

from deploy.local.supervisor import Child, describe_exit

POLL_INTERVAL = 0.2


class StartupError(Exception):
    """The stack could not start; ``child`` (if any) is the process to blame."""

    def __init__(self, message: str, child: Child | None = None) -> None:
        super().__init__(message)
        self.child = child


def port_in_use(host: str, port: int) -> bool:
    """Whether a listener could not bind ``host:port`` now.

    ``SO_REUSEADDR`` as uvicorn, nginx and Valkey set it, so sockets in TIME_WAIT from a
    previous run do not count as taken.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


async def valkey_answers(port: int) -> str | None:
    """``None`` once Valkey answers PING with PONG, else what went wrong."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), timeout=1.0
        )
    except (OSError, TimeoutError) as exc:
        return f"no connection ({type(exc).__name__})"
    try:
        writer.write(b"PING\r\n")
        await writer.drain()
        reply = await asyncio.wait_for(reader.readline(), timeout=1.0)
    except (OSError, TimeoutError) as exc:
        return f"no answer ({type(exc).__name__})"
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    # While loading its append-only file Valkey answers -LOADING.
    return None if reply.startswith(b"+PONG") else reply.decode(errors="replace").strip()


async def http_ready(client: httpx.AsyncClient, url: str) -> str | None:
    """``None`` once ``url`` answers 200, else the last status or error."""
    try:
        response = await client.get(url)
    except httpx.HTTPError as exc:
        return f"no answer ({type(exc).__name__})"
    if response.status_code == 200:
        return None
    return f"{response.status_code} {response.text[:200]}"


async def tcp_open(host: str, port: int) -> str | None:
    """``None`` once something accepts connections on ``host:port``."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout=1.0)
    except (OSError, TimeoutError) as exc:
        return f"no connection ({type(exc).__name__})"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return None


async def wait_until(
    child: Child,
    check: Callable[[], Awaitable[str | None]],
    *,
    within: float,
    what: str,
) -> None:
    """Poll ``check`` until it returns ``None``; fail fast if ``child`` exits meanwhile."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        if child.returncode is not None:
            raise StartupError(
                f"{child.name} exited with {describe_exit(child.returncode)} before it was {what}",
                child,
            )
        problem = await check()
        if problem is None:
            return
        if loop.time() >= deadline:
            raise StartupError(
                f"{child.name} was not {what} after {within:.0f}s (last check: {problem})",
                child,
            )
        await asyncio.sleep(POLL_INTERVAL)
