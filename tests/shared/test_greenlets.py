"""``run_sync``: SQLAlchemy's ``await_`` from synchronous code on reused greenlets, as
``greenlet_spawn`` runs it (results, exceptions both ways, cancellation, context
variables, concurrent callers). The session scope built on it: tests/shared/test_db.py."""

from __future__ import annotations

import asyncio
import contextvars

import pytest
from sqlalchemy.util.concurrency import await_

from shared import greenlets
from shared.greenlets import run_sync

request_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_var", default="-")


async def _later(value: int, delay: float = 0.0) -> int:
    await asyncio.sleep(delay)
    return value


async def _fail(message: str) -> None:
    await asyncio.sleep(0)
    raise ValueError(message)


def _sum_awaited(count: int) -> int:
    return sum(await_(_later(i)) for i in range(count))


async def test_a_function_awaiting_many_times_returns_its_result() -> None:
    assert await run_sync(_sum_awaited, 10) == sum(range(10))
    assert await run_sync(lambda: 7) == 7  # no await at all


async def test_keyword_arguments_reach_the_function() -> None:
    def scaled(value: int, *, factor: int) -> int:
        return await_(_later(value)) * factor

    assert await run_sync(scaled, 3, factor=5) == 15


async def test_greenlets_are_reused_between_calls() -> None:
    await run_sync(_sum_awaited, 2)
    idle = list(greenlets._idle.workers)
    assert idle
    await run_sync(_sum_awaited, 2)
    assert greenlets._idle.workers[-1] is idle[-1]


async def test_an_awaitable_failing_raises_inside_the_function() -> None:
    def recovers() -> str:
        try:
            await_(_fail("boom"))
        except ValueError as exc:
            return f"caught {exc}"
        return "not raised"

    assert await run_sync(recovers) == "caught boom"


async def test_an_exception_the_function_raises_reaches_the_caller_and_the_worker_serves_on() -> (
    None
):
    def fails() -> None:
        await_(_later(1))
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        await run_sync(fails)
    with pytest.raises(ValueError, match="direct"):
        await run_sync(lambda: await_(_fail("direct")))
    assert await run_sync(_sum_awaited, 3) == 3


async def test_a_cancelled_caller_cancels_the_awaitable_and_the_function_sees_it() -> None:
    seen: list[str] = []

    def waits() -> None:
        try:
            await_(asyncio.sleep(30))
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    task = asyncio.create_task(run_sync(waits))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled"]
    assert await run_sync(_sum_awaited, 4) == 6  # the pool still serves


async def test_the_function_sees_the_callers_context_variables() -> None:
    def reads() -> str:
        await_(_later(0))
        return request_var.get()

    async def as_request(name: str) -> str:
        request_var.set(name)
        return await run_sync(reads)

    first = await asyncio.create_task(as_request("first"))
    second = await asyncio.create_task(as_request("second"))
    assert (first, second) == ("first", "second")
    assert await run_sync(reads) == "-"


async def test_concurrent_callers_each_get_their_own_result() -> None:
    def slow(value: int) -> int:
        total = 0
        for step in range(5):
            total += await_(_later(value, delay=0.001 * (value % 3)))
            total += step
        return total

    results = await asyncio.gather(*(run_sync(slow, value) for value in range(40)))
    assert results == [5 * value + 10 for value in range(40)]
    assert len(greenlets._idle.workers) <= greenlets.MAX_IDLE
