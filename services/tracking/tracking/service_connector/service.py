"""Business rules for service connectors: their types' rules, unique names, credentials
sealed at rest (the secrets' cipher), and verification as far as this server can go.

As on the reference's server without RBAC, every user reads every connector, its
credentials included when asked (``expand_secrets``). A connector's secret fields are
one Fernet token, opened only for answers that carry them.

Verification: a Docker connector is checked as the reference's server checks it (its
configuration and the registry it names; the server reaches no registry). A Kubernetes
connector's API server is asked its version with the connector's credentials, through
the egress proxy, which refuses internal addresses (:mod:`.probe`). The other types reach
their provider through a cloud SDK this server does not carry: verifying one answers 501
in one sentence.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.auth import Principal
from shared.db import utcnow
from shared.errors import BadRequest, Conflict, Forbidden, NotFound
from shared.listing import Listing
from tracking.models import ServiceConnector
from tracking.secret.service import NotImplementedHere, SecretCipher
from tracking.service_connector import catalog
from tracking.service_connector.probe import ClusterAccess, ClusterProbe, verify_cluster
from tracking.service_connector.repository import ServiceConnectorRepository, conditions
from tracking.service_connector.schemas import (
    ServiceConnectorInfo,
    ServiceConnectorListQuery,
    ServiceConnectorRequest,
    ServiceConnectorResourcesModel,
    ServiceConnectorUpdate,
    TypedResources,
    type_id,
)

DOCKER_HUB = "docker.io"
ACCESS_FIELDS = tuple(ClusterAccess.__dataclass_fields__)
# The SDK each type's verification needs, named in the 501 it answers here.
SDKS = {
    "aws": "boto3 (the AWS SDK)",
    "gcp": "the Google Cloud client libraries",
    "azure": "the Azure SDK",
    "oauth2": "an OAuth2 client able to reach the token endpoint",
    "hyperai": "paramiko (SSH)",
}


class ServiceConnectorNotFound(NotFound):
    def __init__(self, connector_id: object) -> None:
        super().__init__(
            f"Unable to get service connector with ID '{connector_id}': No service "
            "connector with this ID found"
        )


class ServiceConnectorAlreadyExists(Conflict):
    def __init__(self, name: str, operation: str) -> None:
        super().__init__(
            f"Unable to {operation} the requested service connector with name '{name}': "
            "Found another existing service connector with the same name."
        )


class ConnectorInUse(Forbidden):
    pass


class VerificationUnavailable(NotImplementedHere):
    def __init__(self, spec: dict[str, Any]) -> None:
        sdk = SDKS.get(spec["connector_type"], "a client library")
        super().__init__(
            f"The {spec['name']} needs {sdk} on the server, which this server does not carry."
        )


def _user_id(caller: Principal) -> uuid.UUID:
    if caller.user_id is None:
        raise Forbidden("This token does not belong to a user.")
    return caller.user_id


def docker_registry(resource_id: str) -> str:
    """A Docker resource id (``[http[s]://]host[:port][/repository]``) as its registry."""
    if not re.match(r"^(https?://)?[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)*(:[0-9]+)?(/.+)*$", resource_id):
        raise BadRequest(
            "The connector configuration is incomplete or invalid: Invalid resource ID for "
            f"a Docker registry: {resource_id}. Please provide a valid repository name or "
            "URL in the form of [https://]host[:port][/<repository-name>]."
        )
    if resource_id.startswith(("https://", "http://")):
        return resource_id.split("/")[2]
    return resource_id.split("/")[0]


def _resources(
    spec: dict[str, Any],
    resource_types: Sequence[str],
    ids: list[str] | None,
    error: str | None = None,
) -> ServiceConnectorResourcesModel:
    return ServiceConnectorResourcesModel(
        connector_type=spec,
        resources=[
            TypedResources(resource_type=rt, resource_ids=ids, error=error) for rt in resource_types
        ],
        error=error,
    )


async def verify(
    probe: ClusterProbe,
    spec: dict[str, Any],
    resource_types: Sequence[str],
    configuration: dict[str, Any],
    resource_id: str | None,
) -> ServiceConnectorResourcesModel:
    """What the connector reaches, as far as this server can tell (see the module);
    ``configuration`` with its secret fields."""
    kind = spec["connector_type"]
    if kind == "docker":
        registry = docker_registry(resource_id or configuration.get("registry") or DOCKER_HUB)
        return _resources(spec, resource_types, [registry])
    if kind == "kubernetes":
        access = ClusterAccess(
            **{k: configuration[k] for k in ACCESS_FIELDS if configuration.get(k) is not None}
        )
        error = await verify_cluster(probe, access)
        if error is not None:
            return _resources(spec, resource_types, None, error)
        return _resources(spec, resource_types, [str(configuration["cluster_name"])])
    raise VerificationUnavailable(spec)


def open_secrets(cipher: SecretCipher, connector: ServiceConnector) -> dict[str, str]:
    """The connector's secret fields in clear (none: ``{}``)."""
    if connector.encrypted_secrets is None:
        return {}
    return cipher.open(connector.id, connector.encrypted_secrets)


def rotate(cipher: SecretCipher, connector: ServiceConnector) -> bool:
    """Re-encrypt the connector's secrets under the first key (``python -m
    tracking.reencrypt``); whether they changed."""
    if connector.encrypted_secrets is None:
        return False
    again = cipher.reseal(connector.id, connector.encrypted_secrets)
    if again is None:
        return False
    connector.encrypted_secrets = again
    return True


class ServiceConnectorService:
    def __init__(self, session: AsyncSession, cipher: SecretCipher) -> None:
        self.repository = ServiceConnectorRepository(session)
        self.cipher = cipher

    async def _get(self, connector_id: uuid.UUID, *, lock: bool = False) -> ServiceConnector:
        connector = await self.repository.get(connector_id, lock=lock)
        if connector is None:
            raise ServiceConnectorNotFound(connector_id)
        return connector

    def _seal(self, secrets: dict[str, str]) -> str | None:
        return self.cipher.seal(secrets) if secrets else None

    async def list_page(
        self, listing: Listing, query: ServiceConnectorListQuery
    ) -> tuple[int, Sequence[ServiceConnector]]:
        scope = conditions(query.resource_type, query.resource_id, query.labels(), query.scope_user)
        return await self.repository.page(listing, scope)

    async def get(self, connector_id: uuid.UUID) -> ServiceConnector:
        return await self._get(connector_id)

    async def create(self, request: ServiceConnectorRequest, caller: Principal) -> ServiceConnector:
        spec = catalog.get_type(type_id(request.connector_type))
        reach = catalog.resources(
            spec, request.auth_method, request.resource_types, request.resource_id
        )
        plain, secrets = catalog.split_configuration(
            spec, request.auth_method, request.configuration
        )
        self.cipher.check()
        connector = ServiceConnector(
            name=request.name,
            connector_type=spec["connector_type"],
            description=request.description,
            auth_method=request.auth_method,
            resource_types=reach.resource_types,
            resource_id=reach.resource_id,
            supports_instances=reach.supports_instances,
            configuration=plain,
            encrypted_secrets=self._seal(secrets),
            expires_at=request.expires_at,
            expires_skew_tolerance=request.expires_skew_tolerance,
            expiration_seconds=request.expiration_seconds,
            labels=request.labels,
            user_id=_user_id(caller),
        )
        await self.repository.add(connector, ServiceConnectorAlreadyExists(request.name, "create"))
        return connector

    async def update(
        self, connector_id: uuid.UUID, update: ServiceConnectorUpdate
    ) -> ServiceConnector:
        connector = await self._get(connector_id, lock=True)
        if await self.repository.component_count(connector.id):
            _refuse_changes_in_use(connector, update)
        spec = catalog.get_type(connector.connector_type)
        auth_method = update.auth_method or connector.auth_method
        reach = catalog.resources(spec, auth_method, update.resource_types, update.resource_id)
        if update.configuration is not None:
            plain, secrets = catalog.split_configuration(spec, auth_method, update.configuration)
            connector.configuration = plain
            connector.encrypted_secrets = self._seal(secrets)
        connector.auth_method = auth_method
        connector.resource_types = reach.resource_types
        connector.resource_id = reach.resource_id
        connector.supports_instances = reach.supports_instances
        connector.expiration_seconds = update.expiration_seconds
        for name in ("name", "description", "expires_at", "expires_skew_tolerance", "labels"):
            value = getattr(update, name)
            if value is not None:
                setattr(connector, name, value)
        connector.updated = utcnow()
        await self.repository.add(
            connector, ServiceConnectorAlreadyExists(connector.name, "update")
        )
        return connector

    async def delete(self, connector_id: uuid.UUID) -> None:
        connector = await self._get(connector_id)
        used = await self.repository.component_count(connector.id)
        if used:
            raise ConnectorInUse(
                f"Service connector with ID {connector_id} cannot be deleted as it is still "
                f"referenced by {used} stack components. Before deleting this service "
                "connector, make sure to remove it from all stack components."
            )
        await self.repository.delete(connector)

    async def matching(
        self, listing: Listing, query: ServiceConnectorListQuery
    ) -> Sequence[ServiceConnector]:
        """The connectors the resources list asks about: the page of the connectors list
        its parameters give, as the reference reads it (its filters but for the resource
        id, which each connector's verification checks)."""
        scope = conditions(query.resource_type, None, query.labels(), query.scope_user)
        return (await self.repository.page(listing, scope))[1]

    async def get_given(self, connector_id: uuid.UUID | None) -> ServiceConnector | None:
        return None if connector_id is None else await self._get(connector_id)


class ConnectorVerifier:
    """Verification, apart from the database: what reaches outside (a Kubernetes API
    server) runs with no transaction open, so a slow address holds no connection of the
    pool."""

    def __init__(self, cipher: SecretCipher, probe: ClusterProbe) -> None:
        self.cipher = cipher
        self.probe = probe

    async def verify_config(
        self, request: ServiceConnectorRequest
    ) -> ServiceConnectorResourcesModel:
        spec = catalog.get_type(type_id(request.connector_type))
        reach = catalog.resources(
            spec, request.auth_method, request.resource_types, request.resource_id
        )
        plain, secrets = catalog.split_configuration(
            spec, request.auth_method, request.configuration
        )
        configuration = {**plain, **secrets}
        return await verify(
            self.probe, spec, reach.resource_types, configuration, reach.resource_id
        )

    async def verify(
        self, connector: ServiceConnector, resource_type: str | None, resource_id: str | None
    ) -> ServiceConnectorResourcesModel:
        spec = catalog.get_type(connector.connector_type)
        resource_types = _asked_types(connector, resource_type)
        configuration = {**connector.configuration, **open_secrets(self.cipher, connector)}
        result = await verify(
            self.probe, spec, resource_types, configuration, resource_id or connector.resource_id
        )
        return result.model_copy(update={"id": connector.id, "name": connector.name})

    def check_client(
        self, connector: ServiceConnector, resource_type: str | None, resource_id: str | None
    ) -> None:
        """The reference hands out a client connector for one resource. A Docker or
        Kubernetes connector's client is the connector itself (nothing short-lived is
        made), once the resource asked for is one it reaches; the cloud types make
        short-lived credentials with their SDK (501 here)."""
        spec = catalog.get_type(connector.connector_type)
        _asked_types(connector, resource_type)
        if spec["connector_type"] == "docker":
            docker_registry(resource_id or connector.resource_id or DOCKER_HUB)
        elif spec["connector_type"] != "kubernetes":
            raise VerificationUnavailable(spec)

    async def resources(
        self, connectors: Sequence[ServiceConnector], query: ServiceConnectorListQuery
    ) -> list[ServiceConnectorResourcesModel]:
        """What every connector reaches; one this server cannot verify is listed from
        what it stores, with the reason where it names no resource."""
        found: list[ServiceConnectorResourcesModel] = []
        for connector in connectors:
            if query.resource_id and connector.resource_id != query.resource_id:
                continue
            try:
                found.append(await self.verify(connector, query.resource_type, None))
            except VerificationUnavailable as unavailable:
                found.append(_stored(connector, query.resource_type, unavailable.message))
            except BadRequest:
                continue
        return found

    async def full_stack(
        self,
        info: ServiceConnectorInfo | None,
        connector_id: uuid.UUID | None,
        connector: ServiceConnector | None,
    ) -> str:
        """The connector's type, once verified (``connector``: the one ``connector_id``
        names)."""
        if info is not None and connector_id is not None:
            raise BadRequest("Only one of connector_info or connector_uuid must be provided.")
        if connector is not None:
            await self.verify(connector, None, None)
            return connector.connector_type
        if info is None:
            raise BadRequest("Either connector_info or connector_uuid must be provided.")
        request = ServiceConnectorRequest(
            name="fake",
            connector_type=info.type,
            auth_method=info.auth_method,
            configuration=info.configuration,
        )
        await self.verify_config(request)
        return info.type


def _asked_types(connector: ServiceConnector, resource_type: str | None) -> list[str]:
    if resource_type is None:
        return list(connector.resource_types)
    if resource_type not in connector.resource_types:
        raise BadRequest(
            f"connector '{connector.name}' does not support resource type: "
            f"'{resource_type}'. Supported resource types are: "
            f"{', '.join(connector.resource_types)}"
        )
    return [resource_type]


def _stored(
    connector: ServiceConnector, resource_type: str | None, reason: str
) -> ServiceConnectorResourcesModel:
    """A connector's resources as it stores them (the reference's answer for a type its
    server does not carry): its resource id, or ``reason`` where it names none."""
    ids = [connector.resource_id] if connector.resource_id else None
    types = [resource_type] if resource_type else connector.resource_types
    result = _resources(catalog.get_type(connector.connector_type), types, ids)
    for typed in result.resources:
        typed.error = None if ids else reason
    return result.model_copy(update={"id": connector.id, "name": connector.name})


def _refuse_changes_in_use(connector: ServiceConnector, update: ServiceConnectorUpdate) -> None:
    """A connector stack components use keeps its type, auth method and resources."""
    what = None
    if update.connector_type and type_id(update.connector_type) != connector.connector_type:
        what = "service type"
    elif update.auth_method and update.auth_method != connector.auth_method:
        what = "authentication method"
    elif update.resource_types and update.resource_types != connector.resource_types:
        what = "resource type"
    elif update.resource_id != connector.resource_id:
        what = "resource ID"
    if what is not None:
        raise ConnectorInUse(
            f"The {what} of a service connector that is already actively used in one or "
            "more stack components cannot be changed."
        )
