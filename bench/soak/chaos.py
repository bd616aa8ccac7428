"""The chaos schedule and running it: worker, Valkey, tracking and identity kills."""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.soak.stack import SoakStack
from bench.tracking import say


@dataclass(frozen=True, order=True)
class Step:
    """One thing the chaos does, ``at`` seconds after the sending started."""

    at: float
    action: str  # kill-worker, kill-valkey, restart-valkey, stop-<service>, start-<service>


def schedule(args: argparse.Namespace) -> list[Step]:
    """The chaos, in order: the sending's ``duration`` cut into three gaps around the two
    outages (``--away``: tracking, then identity), Valkey's crash in the first gap, and the worker
    kills spread evenly (each at a random point of its own slice) over the whole of it."""
    rng = random.Random(args.seed)
    gap = (args.duration - 2 * args.outage) / 3
    first, second = args.away
    steps = [
        Step(gap / 4, "kill-valkey"),
        Step(gap / 4 + args.valkey_down, "restart-valkey"),
        Step(gap, f"stop-{first}"),
        Step(gap + args.outage, f"start-{first}"),
        Step(2 * gap + args.outage, f"stop-{second}"),
        Step(2 * gap + 2 * args.outage, f"start-{second}"),
    ]
    slice_ = args.duration / max(1, args.kills)
    steps += [Step((n + rng.random()) * slice_, "kill-worker") for n in range(args.kills)]
    return sorted(steps)


@dataclass
class Outages:
    """When each part was away (monotonic start, end; end ``None`` while away)."""

    windows: dict[str, list[tuple[float, float | None]]] = field(default_factory=dict)

    def begin(self, name: str) -> None:
        self.windows.setdefault(name, []).append((time.monotonic(), None))

    def end(self, name: str) -> None:
        start, _ = self.windows[name][-1]
        self.windows[name][-1] = (start, time.monotonic())

    def covers(self, name: str, start: float, end: float, grace: float = 0.0) -> bool:
        """Whether ``name`` was away (or back less than ``grace`` ago) during [start, end]."""
        return any(
            start <= (stop if stop is not None else end) + grace and end >= began
            for began, stop in self.windows.get(name, [])
        )

    def describe(self, origin: float) -> list[str]:
        """Each window as ``name +start-+end s``, from ``origin`` (monotonic)."""
        return [
            f"{name} +{began - origin:.1f}-" + ("?" if stop is None else f"+{stop - origin:.1f} s")
            for name, spans in self.windows.items()
            for began, stop in spans
        ]

    def last_end(self) -> float | None:
        ends = [stop for spans in self.windows.values() for _, stop in spans if stop is not None]
        return max(ends) if ends else None


async def run_chaos(
    stack: SoakStack, steps: Sequence[Step], outages: Outages, args: argparse.Namespace
) -> int:
    """Each step at its time (after the previous one finished: a restart waits until the
    process answers). A worker kill takes a running worker at random and restarts it
    ``--restart-after`` later. The number of workers killed."""
    rng = random.Random(args.seed + 1)
    restarts: list[asyncio.Task[None]] = []
    killed = 0

    async def restart_worker(n: int) -> None:
        await asyncio.sleep(args.restart_after)
        stack.start_worker(n)

    started_at = time.monotonic()
    for step in steps:
        await asyncio.sleep(max(0.0, started_at + step.at - time.monotonic()))
        action, _, name = step.action.partition("-")
        if step.action == "kill-worker":
            if stack.worker_pids:
                n = rng.choice(sorted(stack.worker_pids))
                stack.kill_worker(n)
                killed += 1
                restarts.append(asyncio.create_task(restart_worker(n)))
        elif step.action == "kill-valkey":
            outages.begin("valkey")
            await asyncio.to_thread(stack.valkey.kill)
            say("soak: Valkey killed")
        elif step.action == "restart-valkey":
            await asyncio.to_thread(stack.valkey.start)
            outages.end("valkey")
            say("soak: Valkey restarted on its files")
        elif action == "stop":
            outages.begin(name)
            await asyncio.to_thread(stack.stop_web, name, args.stop_signal)
            say(f"soak: {name} stopped ({args.stop_signal.name})")
        elif action == "start":
            await asyncio.to_thread(stack.start_web, name)
            outages.end(name)
            say(f"soak: {name} back")
    await asyncio.gather(*restarts)
    return killed


async def watch(stack: SoakStack, until: Sequence[asyncio.Task[Any]]) -> None:
    """Check every second that no process died on its own, until ``until`` are done."""
    while not all(task.done() for task in until):
        stack.check_alive()
        await asyncio.sleep(1.0)
