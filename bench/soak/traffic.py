"""What the soak sets up in the stack, the deliveries it sends, and the runs it counts."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import httpx

from bench.tracking import BenchError, Target, describe_http_error, say
from bench.webhooks import create_webhook, signature

RUNS_PAGE = 500


@dataclass(frozen=True)
class Hook:
    intake: str  # the intake's URL
    snapshot_id: str
    trigger_id: str


def set_up(target: Target, name: str) -> Hook:
    """A pipeline, a snapshot of it, a ``custom`` webhook and a trigger running the
    snapshot for every event."""
    with httpx.Client(base_url=target.base_url, timeout=30.0, trust_env=False) as http:
        headers = {"Authorization": f"Bearer {target.token}"}

        def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            response = http.post(path, json=body, headers=headers)
            if response.status_code != 200:
                raise BenchError(f"cannot set up: {describe_http_error(response)}")
            created: dict[str, Any] = response.json()
            return created

        stacks = http.get("/api/v1/stacks", params={"name": "default"}, headers=headers)
        if stacks.status_code != 200 or not stacks.json().get("items"):
            raise BenchError(f"no default stack: {describe_http_error(stacks)}")
        project = target.project_id
        pipeline = post("/api/v1/pipelines", {"project": project, "name": name})
        snapshot = post(
            "/api/v1/pipeline_snapshots",
            {
                "project": project,
                # Unique to the microsecond: runs never collide on their name.
                "run_name_template": name + "-{date}-{time}",
                "pipeline_configuration": {"name": name},
                "stack": stacks.json()["items"][0]["id"],
                "pipeline": pipeline["id"],
            },
        )
        path = create_webhook(target)
        trigger = post(
            "/api/v1/webhook_triggers",
            {
                "project": project,
                "name": name,
                "webhook_id": path.split("/")[-2],
                "snapshot_id": snapshot["id"],
                "configuration": {"target_events": []},  # custom: every event
            },
        )
    return Hook(target.base_url + path, snapshot["id"], trigger["id"])


def runs_by_delivery(target: Target, snapshot_id: str) -> Counter[str]:
    """How many runs tracking holds for each delivery id (from each run's trigger
    execution info)."""
    found: Counter[str] = Counter()
    with httpx.Client(base_url=target.base_url, timeout=120.0, trust_env=False) as http:
        page = 1
        while True:
            response = http.get(
                "/api/v1/runs",
                params={
                    "snapshot_id": snapshot_id,
                    "hydrate": "true",
                    "size": RUNS_PAGE,
                    "page": page,
                },
                headers={"Authorization": f"Bearer {target.token}"},
            )
            if response.status_code != 200:
                raise BenchError(f"cannot count the runs: {describe_http_error(response)}")
            listed = response.json()
            for run in listed["items"]:
                info = (run.get("metadata") or {}).get("trigger_execution_info") or {}
                upstream = (info.get("webhook_upstream_event") or {}).get("custom") or {}
                found[str(upstream.get("delivery_id"))] += 1
            if page >= listed["total_pages"]:
                return found
            page += 1


def execution_statuses(target: Target, trigger_id: str) -> tuple[Counter[str], list[str]]:
    """The trigger's executions by status, and the distinct errors of the failed ones."""
    statuses: Counter[str] = Counter()
    errors: set[str] = set()
    with httpx.Client(base_url=target.base_url, timeout=120.0, trust_env=False) as http:
        page = 1
        while True:
            response = http.get(
                f"/api/v1/webhook_triggers/{trigger_id}/executions",
                params={"size": RUNS_PAGE, "page": page},
                headers={"Authorization": f"Bearer {target.token}"},
            )
            if response.status_code != 200:
                raise BenchError(f"cannot list executions: {describe_http_error(response)}")
            listed = response.json()
            for execution in listed["items"]:
                statuses[execution["status"]] += 1
                if execution["status"] == "failed" and execution.get("error"):
                    errors.add(str(execution["error"])[:200])
            if page >= listed["total_pages"]:
                return statuses, sorted(errors)
            page += 1


@dataclass
class Answer:
    status: int  # 0: no answer (connection refused, reset, timeout)
    sent_at: float  # monotonic
    seconds: float


def delivery_headers(body: bytes, delivery: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-ZenML-Event": "build.finished",
        "X-ZenML-Delivery": delivery,
        "X-ZenML-Signature-256": signature(body.decode()),
    }


def delivery_body(n: int, delivery: str) -> bytes:
    # A body of its own: a signature over the body alone must not look like a replay.
    event = {"type": "build.finished", "build": {"id": n, "delivery": delivery}}
    return json.dumps(event, separators=(",", ":")).encode()


def retry_pause(response: httpx.Response | None, attempt: int) -> float:
    """The sender's pause before its next try: ``Retry-After`` when given (at most a
    minute), else 1 s doubling up to 30 s; with up to 20% jitter."""
    pause = min(30.0, 2.0 ** (attempt - 1))
    if response is not None:
        with contextlib.suppress(ValueError):
            pause = min(60.0, float(response.headers.get("retry-after", "")))
    return pause * (1 + random.random() / 5)


async def send_all(
    http: httpx.AsyncClient, hook: Hook, tag: str, args: argparse.Namespace
) -> dict[str, list[Answer]]:
    """``--deliveries`` deliveries at a steady rate over ``--duration``, each retried as
    a sender would until a 2xx, a 4xx or ``--give-up``; every answer, by delivery id."""
    answers: dict[str, list[Answer]] = {}
    in_flight = asyncio.Semaphore(args.senders)
    interval = args.duration / args.deliveries

    async def deliver(n: int) -> None:
        delivery = f"{tag}-{n}"
        body = delivery_body(n, delivery)
        mine = answers.setdefault(delivery, [])
        give_up = time.monotonic() + args.give_up
        try:
            for attempt in range(1, 1_000_000):
                sent_at = time.monotonic()
                response: httpx.Response | None = None
                try:
                    response = await http.post(
                        hook.intake, content=body, headers=delivery_headers(body, delivery)
                    )
                    status = response.status_code
                except httpx.TransportError:
                    status = 0
                mine.append(Answer(status, sent_at, time.monotonic() - sent_at))
                if 200 <= status < 500 or time.monotonic() > give_up:
                    return
                await asyncio.sleep(retry_pause(response, attempt))
        finally:
            in_flight.release()

    started_at = time.monotonic()
    async with asyncio.TaskGroup() as group:
        for n in range(args.deliveries):
            await asyncio.sleep(max(0.0, started_at + n * interval - time.monotonic()))
            await in_flight.acquire()
            group.create_task(deliver(n))
            if n and n % max(1, args.deliveries // 10) == 0:
                say(f"soak: {n}/{args.deliveries} deliveries sent")
    say("soak: every delivery answered")
    return answers
