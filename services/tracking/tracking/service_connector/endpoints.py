"""``/service_connectors`` (and the deprecated ``/workspaces/{project}/service_connectors``
list and create) and ``/service_connector_types``."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import page_of, query_extras, read_list
from shared.pagination import Page
from shared.responses import NO_STORE, render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from shared.users import users_by_id
from tracking.core.auth import caller
from tracking.core.schemas import ProjectQuery
from tracking.models import ServiceConnector
from tracking.service_connector import catalog
from tracking.service_connector.repository import CONNECTORS
from tracking.service_connector.schemas import (
    ClientQuery,
    FullStackQuery,
    ServiceConnectorGetQuery,
    ServiceConnectorInfo,
    ServiceConnectorListQuery,
    ServiceConnectorRequest,
    ServiceConnectorResourcesInfo,
    ServiceConnectorResourcesModel,
    ServiceConnectorResponse,
    ServiceConnectorUpdate,
    TypesQuery,
    VerifyConfigQuery,
    VerifyQuery,
    connector_response,
)
from tracking.service_connector.service import (
    ConnectorVerifier,
    ServiceConnectorService,
    open_secrets,
)
from tracking.state import TrackingState

# Connectors are global: a project (``project_name_or_id``) is accepted and ignored, as
# the reference ignores it.
LIST_QUERY = CONNECTORS.query_model(
    extra={**query_extras(ServiceConnectorListQuery), **query_extras(ProjectQuery)}
)
FULL_STACK_KINDS = ("artifact_store", "orchestrator", "container_registry")


def _service(request: Request, session: Any) -> ServiceConnectorService:
    return ServiceConnectorService(session, TrackingState.of(request).secret_cipher)


def _verifier(request: Request) -> ConnectorVerifier:
    """Verification runs after the transaction that read the connector: what it reaches
    outside holds no database connection while it waits."""
    state = TrackingState.of(request)
    return ConnectorVerifier(state.secret_cipher, state.cluster_probe)


async def _rendered(
    request: Request, connectors: list[ServiceConnector], *, hydrate: bool, secrets: bool
) -> list[ServiceConnectorResponse]:
    """Connectors with their creators (one lookup) and, ``secrets``, their secret fields
    in their configuration (which, as on the reference, hydrates a connector that has
    any)."""
    cipher = TrackingState.of(request).secret_cipher
    users = await users_by_id(request, [c.user_id for c in connectors])
    rendered = []
    for connector in connectors:
        opened = open_secrets(cipher, connector) if secrets else {}
        rendered.append(
            connector_response(
                connector,
                catalog.get_type(connector.connector_type),
                users.get(connector.user_id),
                hydrate=hydrate or bool(opened),
                secrets=opened,
            )
        )
    return rendered


async def _one(
    request: Request, connector: ServiceConnector, *, hydrate: bool = True, secrets: bool = True
) -> Response:
    """One connector; answers that may carry credentials are never cached."""
    [item] = await _rendered(request, [connector], hydrate=hydrate, secrets=secrets)
    return render(item, headers=NO_STORE)


async def list_connectors(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, CONNECTORS)
    query = parse_query(request, ServiceConnectorListQuery)
    async with transaction(request) as session:
        total, rows = await _service(request, session).list_page(listing, query)
    items = await _rendered(
        request, list(rows), hydrate=listing.hydrate, secrets=query.expand_secrets
    )
    return render(page_of(listing, total, items), headers=NO_STORE)


async def create(request: Request) -> Response:
    principal = caller(request)
    body = await parse_json(request, ServiceConnectorRequest)
    async with transaction(request) as session:
        connector = await _service(request, session).create(body, principal)
    return await _one(request, connector)


async def get(request: Request) -> Response:
    caller(request)
    connector_id = path_param(request, "connector_id", uuid.UUID)
    query = parse_query(request, ServiceConnectorGetQuery)
    async with transaction(request) as session:
        connector = await _service(request, session).get(connector_id)
    return await _one(request, connector, hydrate=query.hydrate, secrets=query.expand_secrets)


async def update(request: Request) -> Response:
    caller(request)
    connector_id = path_param(request, "connector_id", uuid.UUID)
    body = await parse_json(request, ServiceConnectorUpdate)
    async with transaction(request) as session:
        connector = await _service(request, session).update(connector_id, body)
    return await _one(request, connector)


async def delete(request: Request) -> Response:
    caller(request)
    connector_id = path_param(request, "connector_id", uuid.UUID)
    async with transaction(request) as session:
        await _service(request, session).delete(connector_id)
    return render_null()


async def verify_config(request: Request) -> Response:
    caller(request)
    parse_query(request, VerifyConfigQuery)
    body = await parse_json(request, ServiceConnectorRequest)
    return render(await _verifier(request).verify_config(body))


async def verify(request: Request) -> Response:
    caller(request)
    connector_id = path_param(request, "connector_id", uuid.UUID)
    query = parse_query(request, VerifyQuery)
    async with transaction(request) as session:
        connector = await _service(request, session).get(connector_id)
    verifier = _verifier(request)
    return render(await verifier.verify(connector, query.resource_type, query.resource_id))


async def client(request: Request) -> Response:
    caller(request)
    connector_id = path_param(request, "connector_id", uuid.UUID)
    query = parse_query(request, ClientQuery)
    async with transaction(request) as session:
        connector = await _service(request, session).get(connector_id)
    _verifier(request).check_client(connector, query.resource_type, query.resource_id)
    return await _one(request, connector)


async def resources(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, CONNECTORS)
    query = parse_query(request, ServiceConnectorListQuery)
    async with transaction(request) as session:
        connectors = await _service(request, session).matching(listing, query)
    return render(await _verifier(request).resources(connectors, query))


async def full_stack_resources(request: Request) -> Response:
    caller(request)
    query = parse_query(request, FullStackQuery)
    info = await parse_json(request, ServiceConnectorInfo | None)  # type: ignore[arg-type]
    async with transaction(request) as session:
        connector = await _service(request, session).get_given(query.connector_uuid)
    connector_type = await _verifier(request).full_stack(info, query.connector_uuid, connector)
    # Only the cloud types (which need an SDK here, and answer 501 before this) name
    # components a full stack could use.
    answer = ServiceConnectorResourcesInfo(
        connector_type=connector_type,
        components_resources_info={kind: [] for kind in FULL_STACK_KINDS},
    )
    return render(answer)


async def list_types(request: Request) -> Response:
    caller(request)
    query = parse_query(request, TypesQuery)
    return render(catalog.find_types(query.connector_type, query.resource_type, query.auth_method))


async def get_type(request: Request) -> Response:
    caller(request)
    return render(catalog.get_type(request.path_params["connector_type"]))


def routes() -> list[ApiRoute]:
    many = "/api/v1/service_connectors"
    one = many + "/{connector_id:uuid_param}"
    tags = ["service_connectors"]
    return [
        api_route(
            many,
            list_connectors,
            method="GET",
            summary="List Service Connectors",
            tags=tags,
            query=LIST_QUERY,
            response=Page[ServiceConnectorResponse],
            errors=(400, 422),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Service Connector",
            tags=tags,
            body=ServiceConnectorRequest,
            response=ServiceConnectorResponse,
            errors=(400, 404, 409, 422),
        ),
        api_route(
            many + "/resources",
            resources,
            method="GET",
            summary="List Service Connector Resources",
            tags=tags,
            query=LIST_QUERY,
            response=list[ServiceConnectorResourcesModel],
            errors=(422,),
        ),
        api_route(
            many + "/verify",
            verify_config,
            method="POST",
            summary="Validate And Verify Service Connector Config",
            tags=tags,
            query=VerifyConfigQuery,
            body=ServiceConnectorRequest,
            response=ServiceConnectorResourcesModel,
            errors=(400, 404, 422, 501),
        ),
        api_route(
            many + "/full_stack_resources",
            full_stack_resources,
            method="POST",
            summary="Get Resources Based On Service Connector Info",
            tags=tags,
            query=FullStackQuery,
            body=ServiceConnectorInfo,
            response=ServiceConnectorResourcesInfo,
            errors=(400, 404, 422, 501),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Service Connector",
            tags=tags,
            query=ServiceConnectorGetQuery,
            response=ServiceConnectorResponse,
            errors=(404, 422),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Service Connector",
            tags=tags,
            body=ServiceConnectorUpdate,
            response=ServiceConnectorResponse,
            errors=(400, 403, 404, 409, 422),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Delete Service Connector",
            tags=tags,
            errors=(403, 404),
        ),
        api_route(
            one + "/verify",
            verify,
            method="PUT",
            summary="Validate And Verify Service Connector",
            tags=tags,
            query=VerifyQuery,
            response=ServiceConnectorResourcesModel,
            errors=(400, 404, 422, 501),
        ),
        api_route(
            one + "/client",
            client,
            method="GET",
            summary="Get Service Connector Client",
            tags=tags,
            query=ClientQuery,
            response=ServiceConnectorResponse,
            errors=(400, 404, 422, 501),
        ),
        api_route(
            "/api/v1/service_connector_types",
            list_types,
            method="GET",
            summary="List Service Connector Types",
            tags=tags,
            query=TypesQuery,
            response=list[dict[str, Any]],
            errors=(422,),
        ),
        api_route(
            "/api/v1/service_connector_types/{connector_type}",
            get_type,
            method="GET",
            summary="Get Service Connector Type",
            tags=tags,
            response=dict[str, Any],
            errors=(404,),
        ),
    ]
