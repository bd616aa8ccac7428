"""SQLAlchemy's synchronous session code run from async code on reused greenlets.

``AsyncSession`` runs each call (taking the connection, commit, close) in a new greenlet
(``greenlet_spawn``), in which the synchronous ORM code reaches the async driver through
``await_``. A new greenlet costs more than its object: CPython gives it a frame stack of its
own, mapped on its first call and unmapped when it ends (two system calls), and every
request's transaction used three. :func:`run_sync` does the same job as ``greenlet_spawn``
(the function may ``await_`` any number of times; an exception raised by an awaitable is
thrown into it) on a greenlet kept from an earlier call: :func:`shared.db.session_scope`
ends its transaction with one such call. Measured on PostgreSQL: a transaction of one
SELECT costs ~50 µs less CPU that way (of ~400 µs), a small GET through the whole service
stack in process 20-45 µs less (of 420-500 µs).

SQLAlchemy's ``await_`` hands its awaitable to the parent greenlet only from a greenlet
marked ``__sqlalchemy_greenlet_provider__`` (``sqlalchemy.util.concurrency``, private):
:class:`_Worker` carries the mark. ``tests/shared/test_greenlets.py`` fails if SQLAlchemy
stops honouring it.

Greenlets belong to the thread that made them, so each thread keeps its own few.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from greenlet import GreenletExit, getcurrent, greenlet

__all__ = ["run_sync"]

T = TypeVar("T")

MAX_IDLE = 16
"""Greenlets kept per thread: as many as calls that await at once, beyond which new ones
are made and dropped again."""


class _Finished:
    """What a worker greenlet hands back when its function has returned or raised (any
    other value it hands back is an awaitable from ``await_``)."""

    __slots__ = ("error", "value")

    def __init__(self, value: Any, error: BaseException | None) -> None:
        self.value = value
        self.error = error


class _Worker(greenlet):  # type: ignore[misc]  # greenlet ships no types
    """Runs one function per switch, for as long as it is reused."""

    # What SQLAlchemy's await_ looks for: this greenlet may hand awaitables to its parent.
    __sqlalchemy_greenlet_provider__ = True

    def __init__(self) -> None:
        super().__init__(self._serve)

    def _serve(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        while True:
            try:
                finished = _Finished(fn(*args, **kwargs), None)
            except GreenletExit:
                raise  # dropped while suspended: end, do not serve again
            except BaseException as exc:
                finished = _Finished(None, exc)
            del fn, args, kwargs  # nothing of this call outlives it
            fn, args, kwargs = self.parent.switch(finished)


class _Idle(threading.local):
    def __init__(self) -> None:
        self.workers: list[_Worker] = []


_idle = _Idle()


async def run_sync(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` where it may call SQLAlchemy's ``await_``, as
    ``greenlet_spawn(fn, ...)`` runs it, on a reused greenlet."""
    idle = _idle.workers
    worker = idle.pop() if idle else _Worker()
    driver = getcurrent()
    worker.parent = driver
    worker.gr_context = driver.gr_context  # the caller's context variables
    result = worker.switch(fn, args, kwargs)
    while type(result) is not _Finished:
        try:
            value = await cast(Awaitable[Any], result)
        except BaseException as exc:
            # The awaitable failed (or this task was cancelled): the function sees it raised
            # by its await_, and goes on from there.
            result = worker.throw(exc)
        else:
            result = worker.switch(value)
    # Back in the pool only once its function is done (it is suspended, ready for the next).
    if len(idle) < MAX_IDLE:
        idle.append(worker)
    finished: _Finished = result
    if finished.error is not None:
        error, finished.error = finished.error, None
        raise error
    return cast(T, finished.value)
