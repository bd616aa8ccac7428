"""The in-process cache behind the auth checks that ask another service (workload scopes,
API-key exchanges): values loaded on demand, each kept for its own time."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__: list[str] = []  # nothing outside shared uses it

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

Loader = Callable[[], Coroutine[object, object, tuple[V, float]]]
"""Loads a value; answers it and how many seconds to keep it (0 or less: not kept)."""


@dataclass(frozen=True)
class Kept(Generic[V]):
    value: V
    expires_at: float


class LoadCache(Generic[K, V]):
    """At most ``max_entries`` values (the least recently used dropped first), each kept
    as long as its load said. Requests that load one key at the same time share one
    load, which a caller going away does not cancel; a load that raises is not kept.
    ``clock`` (monotonic seconds) is injectable for tests."""

    def __init__(self, *, max_entries: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self._kept: OrderedDict[K, Kept[V]] = OrderedDict()
        self._inflight: dict[K, asyncio.Task[tuple[V, float]]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def kept(self, key: K) -> Kept[V] | None:
        """``key``'s value while it is kept."""
        kept = self._kept.get(key)
        if kept is None or kept.expires_at <= self._clock():
            return None
        self._kept.move_to_end(key)
        return kept

    def loading(self, key: K) -> bool:
        """Whether a load of ``key`` is under way (a caller may join it)."""
        return key in self._inflight

    async def load(self, key: K, loader: Loader[V], *, join: bool = True) -> V:
        """``key``'s value loaded now, by the load already under way unless ``join`` is
        false (a value that must be newer than this call)."""
        task = self._inflight.get(key) if join else None
        if task is None:
            task = asyncio.create_task(loader())
            self._inflight[key] = task
            task.add_done_callback(lambda done: self._settle(key, done))
        value, _ = await asyncio.shield(task)
        return value

    def _settle(self, key: K, task: asyncio.Task[tuple[V, float]]) -> None:
        if self._inflight.get(key) is task:
            del self._inflight[key]
        if task.cancelled() or task.exception() is not None:
            return
        value, keep = task.result()
        if keep <= 0:
            return
        self._kept[key] = Kept(value, self._clock() + keep)
        self._kept.move_to_end(key)
        while len(self._kept) > self.max_entries:
            self._kept.popitem(last=False)
