"""Waiting for something to happen in a test: until it holds, or a loud failure naming
what did not happen. A deadline here is a bound on a hang, never the thing tested: a test
waits for the event it needs, and the deadline only turns a hang into a failure."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest


def wait_for(
    check: Callable[[], object], what: str, within: float = 30.0, every: float = 0.1
) -> None:
    """Return once ``check()`` is true, asking every ``every`` seconds; fail the test
    (naming ``what``) when ``within`` seconds pass first."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {within:g}s: {what}", pytrace=False)
        time.sleep(every)


async def until(
    check: Callable[[], object | Awaitable[object]], what: str, within: float = 30.0
) -> None:
    """:func:`wait_for` on the event loop: ``check`` may be a plain function or a
    coroutine function."""
    deadline = time.monotonic() + within
    while True:
        done = check()
        if isinstance(done, Awaitable):
            done = await done
        if done:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"not within {within:g}s: {what}", pytrace=False)
        await asyncio.sleep(0.005)
