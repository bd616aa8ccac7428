"""``/deployments``: pipeline snapshots served by a deployer."""

from __future__ import annotations

from starlette.routing import BaseRoute

from shared.pagination import Page
from shared.routing import api_route
from tracking.core.schemas import HydrateQuery
from tracking.core.scoped import (
    ScopedListQuery,
    create_handler,
    delete_handler,
    get_handler,
    list_handler,
    query_extras,
)
from tracking.deployment.repository import DEPLOYMENTS
from tracking.deployment.schemas import DeploymentRequest, DeploymentResponse, deployment_response
from tracking.deployment.service import DeploymentService

LIST_QUERY = DEPLOYMENTS.query_model(extra=query_extras(ScopedListQuery))

list_deployments = list_handler(DeploymentService, DEPLOYMENTS, deployment_response)
create = create_handler(DeploymentService, DeploymentRequest, deployment_response)
get = get_handler(DeploymentService, "deployment_id", deployment_response)
delete = delete_handler(DeploymentService, "deployment_id")


def routes() -> list[BaseRoute]:
    many = "/api/v1/deployments"
    one = f"{many}/{{deployment_id}}"
    tags = ["deployments"]
    return [
        api_route(
            many,
            list_deployments,
            method="GET",
            summary="List Deployments",
            tags=tags,
            query=LIST_QUERY,
            response=Page[DeploymentResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Deployment",
            tags=tags,
            body=DeploymentRequest,
            response=DeploymentResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Deployment",
            tags=tags,
            query=HydrateQuery,
            response=DeploymentResponse,
            errors=(404,),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Deployment", tags=tags, errors=(404,)
        ),
    ]
