"""Workload scopes: the cache every service keeps of tracking's answers, and the HTTP
source that asks tracking (an ``httpx.MockTransport`` stands for the other process)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from uuid import uuid4

import httpx
import pytest

from shared.auth import (
    ScopeKind,
    ScopeState,
    TrackingScopeSource,
    WorkloadScope,
    WorkloadScopes,
    scopes_named,
)
from shared.errors import NO_SUCH_ENDPOINT, ServiceUnavailable
from tests.shared.auth.conftest import Clock, TrackingObjects

TRACKING = "http://tracking.test"


async def test_answers_are_cached_for_the_ttl(
    tracking_objects: TrackingObjects, clock: Clock
) -> None:
    scopes = WorkloadScopes(tracking_objects, ttl=60, clock=clock)
    scope = tracking_objects.add()
    first = await scopes.state(scope)
    tracking_objects.put(scope, active=False, usable=False)

    clock.advance(59)
    cached = await scopes.state(scope)
    clock.advance(1)
    expired = await scopes.state(scope)

    assert first is not None
    assert cached == first
    assert expired is not None
    assert expired.usable is False
    assert tracking_objects.lookups == 2


async def test_missing_objects_are_cached_too(tracking_objects: TrackingObjects) -> None:
    scopes = WorkloadScopes(tracking_objects, ttl=60)
    scope = WorkloadScope(ScopeKind.SCHEDULE, uuid4())

    assert await scopes.state(scope) is None
    assert await scopes.state(scope) is None
    assert tracking_objects.lookups == 1


async def test_fresh_asks_again_and_refreshes_the_cache(
    tracking_objects: TrackingObjects,
) -> None:
    scopes = WorkloadScopes(tracking_objects, ttl=60)
    scope = tracking_objects.add(ScopeKind.SCHEDULE)
    await scopes.state(scope)
    tracking_objects.put(scope, active=False, usable=False)

    fresh = await scopes.state(scope, fresh=True)
    cached = await scopes.state(scope)

    assert fresh is not None
    assert fresh.active is False
    assert cached == fresh
    assert tracking_objects.lookups == 2


async def test_zero_ttl_asks_every_time(tracking_objects: TrackingObjects) -> None:
    scopes = WorkloadScopes(tracking_objects, ttl=0)
    scope = tracking_objects.add()
    for _ in range(3):
        await scopes.state(scope)
    assert tracking_objects.lookups == 3


async def test_cache_keeps_at_most_max_entries(tracking_objects: TrackingObjects) -> None:
    scopes = WorkloadScopes(tracking_objects, ttl=60, max_entries=2)
    first, second, third = (tracking_objects.add() for _ in range(3))
    for scope in (first, second, third):
        await scopes.state(scope)

    await scopes.state(first)  # dropped as the least recently used: asked again

    assert tracking_objects.lookups == 4


class SlowTracking(TrackingObjects):
    """Answers only once released, so concurrent lookups overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def state(self, scope: WorkloadScope) -> ScopeState | None:
        self.lookups += 1
        self.asked.set()
        await self.release.wait()
        return self.states.get(scope)


async def test_concurrent_lookups_of_one_object_share_one_call() -> None:
    tracking = SlowTracking()
    scopes = WorkloadScopes(tracking, ttl=60)
    scope = tracking.add()
    waiting = [asyncio.create_task(scopes.state(scope)) for _ in range(10)]
    await tracking.asked.wait()
    tracking.release.set()

    answers = await asyncio.gather(*waiting)

    assert tracking.lookups == 1
    assert all(answer == tracking.states[scope] for answer in answers)


class DownTracking(TrackingObjects):
    async def state(self, scope: WorkloadScope) -> ScopeState | None:
        self.lookups += 1
        raise ServiceUnavailable("tracking is down")


async def test_a_failed_lookup_raises_and_is_not_cached() -> None:
    tracking = DownTracking()
    scopes = WorkloadScopes(tracking, ttl=60)
    scope = WorkloadScope(ScopeKind.PIPELINE_RUN, uuid4())

    for _ in range(2):
        with pytest.raises(ServiceUnavailable):
            await scopes.state(scope)
    assert tracking.lookups == 2


def test_scopes_named_reads_claims_and_query_values_in_the_reference_order() -> None:
    run, schedule = uuid4(), uuid4()
    named = scopes_named(
        {"pipeline_run_id": str(run), "schedule_id": schedule, "deployment_id": "x", "a": 1}
    )
    assert named == [
        WorkloadScope(ScopeKind.SCHEDULE, schedule),
        WorkloadScope(ScopeKind.PIPELINE_RUN, run),
    ]


Respond = Callable[[httpx.Request], httpx.Response]


def source_over(respond: Respond, seen: list[httpx.Request] | None = None) -> TrackingScopeSource:
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return respond(request)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return TrackingScopeSource(http, TRACKING + "/", auth=StaticBearer("service-token"))


class StaticBearer(httpx.Auth):
    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


async def test_source_asks_tracking_as_the_service() -> None:
    scope = WorkloadScope(ScopeKind.PIPELINE_RUN, uuid4())
    state = ScopeState(kind=scope.kind, id=scope.id, active=False, usable=True)
    seen: list[httpx.Request] = []
    source = source_over(lambda _: httpx.Response(200, content=state.model_dump_json()), seen)

    assert await source.state(scope) == state
    (request,) = seen
    assert str(request.url) == f"{TRACKING}/internal/v1/workload_scopes/pipeline_run/{scope.id}"
    assert request.headers["Authorization"] == "Bearer service-token"


async def test_trackings_not_found_means_the_object_is_gone() -> None:
    body = {"detail": ["KeyError", "Unable to get schedule …"]}
    source = source_over(lambda _: httpx.Response(404, json=body))

    assert await source.state(WorkloadScope(ScopeKind.SCHEDULE, uuid4())) is None


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(404, json={"detail": "Not Found"}),  # no such route: misconfigured
        httpx.Response(404, json={"detail": ["KeyError", NO_SUCH_ENDPOINT]}),  # the same
        httpx.Response(401, json={"detail": ["CredentialsNotValid", "…"]}),
        httpx.Response(503, text="upstream down"),
        httpx.Response(200, json={"kind": "schedule"}),
        httpx.Response(200, text="<html>"),
    ],
)
async def test_anything_else_is_unavailable_never_accepted(answer: httpx.Response) -> None:
    source = source_over(lambda _: answer)

    with pytest.raises(ServiceUnavailable):
        await source.state(WorkloadScope(ScopeKind.DEPLOYMENT, uuid4()))


async def test_unreachable_tracking_is_unavailable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(ServiceUnavailable):
        await source_over(refuse).state(WorkloadScope(ScopeKind.DEPLOYMENT, uuid4()))
