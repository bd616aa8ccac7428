"""``/deployments``: pipeline snapshots served by a deployer."""

from __future__ import annotations

from shared.auth import ScopeKind
from shared.routing import ApiRoute
from tracking.core.auth import MANAGING_KINDS
from tracking.core.scoped import (
    ResourceRoutes,
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
SCOPE = ScopeKind.DEPLOYMENT
create = create_handler(
    DeploymentService, DeploymentRequest, deployment_response, kinds=MANAGING_KINDS
)
get = get_handler(DeploymentService, "deployment_id", deployment_response, scope=SCOPE)
delete = delete_handler(DeploymentService, "deployment_id", scope=SCOPE)


DEPLOYMENT = ResourceRoutes(
    path="/api/v1/deployments",
    id_param="deployment_id",
    label="Deployment",
    plural="Deployments",
    tag="deployments",
    request=DeploymentRequest,
    response=DeploymentResponse,
    list_query=LIST_QUERY,
)


def routes() -> list[ApiRoute]:
    return DEPLOYMENT.routes(list_=list_deployments, create=create, get=get, delete=delete)
