"""A path one route spells with a literal segment is that route's alone: another route's
parameter in that place never takes a method the literal route does not (issue 39)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route

from deploy.config import load_stack
from deploy.gateway.docs import service_app
from shared.routing import ApiRoute, api_route, literal_segments_first

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
SAMPLE = "7c3a1b2e-9d4f-4e6a-8b5c-1f2e3d4c5b6a"
_PARAMETER = re.compile(r"\{[^{}]*\}")


async def ok(_request: object) -> Response:
    return Response("ok")


def flavor_routes() -> list[BaseRoute]:
    return [
        api_route("/flavors/{flavor_id:uuid_param}", ok, method="GET", summary="get"),
        api_route("/flavors/{flavor_id:uuid_param}", ok, method="PUT", summary="update"),
        api_route("/flavors/sync", ok, method="PATCH", summary="sync"),
        api_route("/flavors/{flavor_id:uuid_param}/{part}", ok, method="GET", summary="part"),
    ]


def client(routes: list[BaseRoute]) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(Starlette(routes=routes))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


async def test_a_parameter_route_steps_aside_for_a_literal_segment_in_its_place():
    async with client(literal_segments_first(flavor_routes())) as http:
        refused = await http.get("/flavors/sync")
        assert refused.status_code == 405
        assert refused.headers["allow"] == "PATCH"
        assert (await http.patch("/flavors/sync")).status_code == 200
        assert (await http.get(f"/flavors/{SAMPLE}")).status_code == 200
        assert (await http.get("/flavors/sync/anything")).status_code == 200


async def test_without_it_the_parameter_route_takes_the_literal_path():
    async with client(flavor_routes()) as http:
        assert (await http.get("/flavors/sync")).status_code == 200


def test_only_a_literal_where_the_parameter_is_first_makes_a_route_step_aside():
    routes = literal_segments_first(flavor_routes())
    by_summary = {r.operation.summary: r for r in routes if isinstance(r, ApiRoute)}
    assert by_summary["get"].yields_to == (by_summary["sync"],)
    assert by_summary["sync"].yields_to == ()
    assert by_summary["part"].yields_to == ()


def _sample_path(route: Route) -> str:
    return _PARAMETER.sub(SAMPLE, route.path_format)


def _resolved(routes: Sequence[BaseRoute], path: str, method: str) -> tuple[Route | None, set[str]]:
    """Starlette's choice for ``method`` at ``path`` (the first full match), and every
    method the routes matching the path take (the 405's Allow)."""
    scope = {"type": "http", "path": path, "method": method, "root_path": ""}
    chosen: Route | None = None
    allowed: set[str] = set()
    for route in routes:
        if not isinstance(route, Route):
            continue
        match = route.matches(scope)[0]
        if match is Match.FULL and chosen is None:
            chosen = route
        if match is not Match.NONE:
            allowed |= route.methods or set()
    return chosen, allowed


def _service_apps() -> list[tuple[str, Sequence[BaseRoute]]]:
    apps: list[tuple[str, Sequence[BaseRoute]]] = []
    for service in load_stack().web_services:
        try:
            apps.append((service.name, service_app(service.module).routes))
        except LookupError:
            continue
    return apps


@pytest.mark.parametrize(("name", "routes"), _service_apps(), ids=lambda v: str(v)[:20])
def test_every_route_of_every_service_answers_its_own_path(
    name: str, routes: Sequence[BaseRoute]
) -> None:
    """Each route's path (a UUID for each parameter) goes, for a method its template
    takes, to a route of that template; for any other method, to none (405), with Allow
    naming exactly its template's methods."""
    wrong = []
    flat = [route for route in routes if isinstance(route, Route)]
    for route in flat:
        path = _sample_path(route)
        same = [r for r in flat if r.path_format == route.path_format]
        served = set().union(*(r.methods or set() for r in same))
        for method in METHODS:
            chosen, allowed = _resolved(routes, path, method)
            if method in served:
                if chosen is None or chosen.path_format != route.path_format:
                    taken = None if chosen is None else chosen.path_format
                    wrong.append(f"{method} {path} goes to {taken}")
            elif chosen is not None:
                wrong.append(f"{method} {path} goes to {chosen.path_format}, not a 405")
            elif allowed != served:
                wrong.append(f"{method} {path}: Allow {sorted(allowed)}, not {sorted(served)}")
    assert not wrong, f"{name}:\n" + "\n".join(sorted(set(wrong)))
