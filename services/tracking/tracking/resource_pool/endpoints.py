"""``/resource_pools``, ``/resource_pool_subject_policies`` and ``/resource_requests``:
read as the reference reads them (a 422 for a bad body, path id or page), then refused as
the reference's open-source server refuses them (501, :class:`ResourcePoolsNotEnabled`)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.auth import caller_id
from tracking.core.schemas import HydrateQuery
from tracking.resource_pool.schemas import (
    ResourcePoolListQuery,
    ResourcePoolRequest,
    ResourcePoolSubjectPolicyRequest,
    ResourcePoolSubjectPolicyUpdate,
    ResourcePoolUpdate,
)
from tracking.resource_pool.service import ResourcePoolService

Handler = Callable[[Request], Awaitable[Response]]


def _refusing(
    *, body: type[BaseModel] | None = None, query: type[BaseModel] | None = None, id_name: str = ""
) -> Handler:
    """A handler that reads the request as the reference does, then refuses it."""

    async def handler(request: Request) -> Response:
        caller_id(request)
        if id_name:
            path_param(request, id_name, uuid.UUID)
        if query is not None:
            parse_query(request, query)
        if body is not None:
            await parse_json(request, body)
        ResourcePoolService().refuse()

    return handler


def _family(
    many: str,
    id_name: str,
    tags: list[str],
    names: tuple[str, str],
    operations: dict[str, type[BaseModel] | None],
) -> list[ApiRoute]:
    """The routes of one family: ``operations`` maps ``create``, ``list``, ``get``,
    ``update`` and ``delete`` to their body model (or ``None``)."""
    one = f"{many}/{{{id_name}:uuid_param}}"
    single, plural = names
    shapes = {
        "create": (many, "POST", f"Create {single}", None),
        "list": (many, "GET", f"List {plural}", ResourcePoolListQuery),
        "get": (one, "GET", f"Get {single}", HydrateQuery),
        "update": (one, "PUT", f"Update {single}", None),
        "delete": (one, "DELETE", f"Delete {single}", None),
    }
    routes = []
    for operation, body in operations.items():
        path, method, summary, query = shapes[operation]
        handler = _refusing(body=body, query=query, id_name=id_name if path == one else "")
        routes.append(
            api_route(
                path,
                handler,
                method=method,
                summary=summary,
                tags=tags,
                query=query,
                body=body,
                errors=(501,),
            )
        )
    return routes


def routes() -> list[ApiRoute]:
    return [
        *_family(
            "/api/v1/resource_pools",
            "resource_pool_id",
            ["resource_pools"],
            ("Resource Pool", "Resource Pools"),
            {
                "create": ResourcePoolRequest,
                "list": None,
                "get": None,
                "update": ResourcePoolUpdate,
                "delete": None,
            },
        ),
        *_family(
            "/api/v1/resource_pool_subject_policies",
            "policy_id",
            ["resource_pool_subject_policies"],
            ("Resource Pool Subject Policy", "Resource Pool Subject Policies"),
            {
                "create": ResourcePoolSubjectPolicyRequest,
                "list": None,
                "get": None,
                "update": ResourcePoolSubjectPolicyUpdate,
                "delete": None,
            },
        ),
        *_family(
            "/api/v1/resource_requests",
            "resource_request_id",
            ["resource_requests"],
            ("Resource Request", "Resource Requests"),
            {"list": None, "get": None, "delete": None},
        ),
    ]
