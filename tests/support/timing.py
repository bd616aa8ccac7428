"""Comparing the cost of two operations on a busy machine."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable

Operation = Callable[[], Awaitable[object]]


async def cpu_time_ratio(measured: Operation, reference: Operation, rounds: int = 9) -> float:
    """The median CPU time of ``measured`` over ``reference``'s, run in turns after one
    warm-up of each. CPU time of this process (threads included, so the password hashing
    of ``asyncio.to_thread`` counts), which other processes do not inflate as they do
    wall-clock time."""

    async def cpu_seconds(operation: Operation) -> float:
        started = time.process_time()
        await operation()
        return time.process_time() - started

    await cpu_seconds(reference)
    await cpu_seconds(measured)
    spent: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        spent[0].append(await cpu_seconds(measured))
        spent[1].append(await cpu_seconds(reference))
    return statistics.median(spent[0]) / statistics.median(spent[1])
