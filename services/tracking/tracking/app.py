"""The tracking service: projects, stacks, artifacts and their versions (with their stores'
data), code repositories, deployments, and the pipelines, runs and schedules they refer to."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from shared.app import State, create_service_app
from shared.auth import WorkloadScopes
from shared.settings import PLATFORM_VERSION
from shared.users import create_user_directory
from tracking.artifact import endpoints as artifact_endpoints
from tracking.artifact_version import endpoints as artifact_version_endpoints
from tracking.artifact_version.download import DownloadTokens
from tracking.bootstrap import ensure_defaults
from tracking.code_repository import endpoints as code_repository_endpoints
from tracking.component import endpoints as component_endpoints
from tracking.component.secrets import ComponentSecrets
from tracking.core.aliases import aliases
from tracking.curated_visualization import endpoints as curated_visualization_endpoints
from tracking.deployment import endpoints as deployment_endpoints
from tracking.flavor import endpoints as flavor_endpoints
from tracking.hook_invocation import endpoints as hook_invocation_endpoints
from tracking.logs import endpoints as logs_endpoints
from tracking.model import endpoints as model_endpoints
from tracking.model_version import endpoints as model_version_endpoints
from tracking.model_version_link import endpoints as model_version_link_endpoints
from tracking.onboarding import endpoints as onboarding_endpoints
from tracking.pipeline import endpoints as pipeline_endpoints
from tracking.pipeline_build import endpoints as pipeline_build_endpoints
from tracking.pipeline_run import endpoints as pipeline_run_endpoints
from tracking.pipeline_snapshot import endpoints as pipeline_snapshot_endpoints
from tracking.project import endpoints as project_endpoints
from tracking.resource_pool import endpoints as resource_pool_endpoints
from tracking.run_metadata import endpoints as run_metadata_endpoints
from tracking.run_template import endpoints as run_template_endpoints
from tracking.run_wait_condition import endpoints as run_wait_condition_endpoints
from tracking.schedule import endpoints as schedule_endpoints
from tracking.secret import endpoints as secret_endpoints
from tracking.secret.service import SecretCipher
from tracking.service import endpoints as service_endpoints
from tracking.service_connector import endpoints as service_connector_endpoints
from tracking.service_connector.probe import ClusterProbe
from tracking.settings import Settings
from tracking.stack import endpoints as stack_endpoints
from tracking.state import TrackingState
from tracking.statistics import endpoints as statistics_endpoints
from tracking.step_run import endpoints as step_run_endpoints
from tracking.store import ArtifactStores
from tracking.store.egress import AddressPolicy, EgressProxy
from tracking.store.s3 import S3Options
from tracking.tag import endpoints as tag_endpoints
from tracking.trigger import endpoints as trigger_endpoints
from tracking.workload_scope import endpoints as workload_scope_endpoints
from tracking.workload_scope.service import LocalScopeSource

MIGRATIONS = Path(__file__).parent / "migrations"


@functools.cache
def routes() -> tuple[BaseRoute, ...]:
    """The service's routes. They depend on no setting and hold no state, so they are
    built once a process and shared by its apps (the tests build an app per test)."""
    served = [
        *project_endpoints.routes(),
        *stack_endpoints.routes(),
        *component_endpoints.routes(),
        *artifact_endpoints.routes(),
        *artifact_version_endpoints.routes(),
        *code_repository_endpoints.routes(),
        *pipeline_endpoints.routes(),
        *pipeline_snapshot_endpoints.routes(),
        *pipeline_run_endpoints.routes(),
        *step_run_endpoints.routes(),
        *logs_endpoints.routes(),
        *deployment_endpoints.routes(),
        *schedule_endpoints.routes(),
        *workload_scope_endpoints.routes(),
        *onboarding_endpoints.routes(),
        *trigger_endpoints.routes(),
        *service_connector_endpoints.routes(),
        *model_endpoints.routes(),
        *model_version_endpoints.routes(),
        *model_version_link_endpoints.routes(),
        *run_template_endpoints.routes(),
        *run_wait_condition_endpoints.routes(),
        *service_endpoints.routes(),
        *curated_visualization_endpoints.routes(),
        *resource_pool_endpoints.routes(),
        *hook_invocation_endpoints.routes(),
        *flavor_endpoints.routes(),
        *pipeline_build_endpoints.routes(),
        *run_metadata_endpoints.routes(),
        *tag_endpoints.routes(),
        *secret_endpoints.routes(),
        *statistics_endpoints.routes(),
    ]
    return (*served, *aliases(served))


@asynccontextmanager
async def _lifespan(
    app: Starlette, state: State, *, outside: httpx.AsyncBaseTransport | None = None
) -> AsyncIterator[State]:
    """``outside``: replaces the network a connector's verification reaches (tests)."""
    settings: Settings = state["settings"]
    await ensure_defaults(state["sessionmaker"], settings.artifact_store_root)
    secret = settings.download_token_secret
    downloads = DownloadTokens.create(
        secret.get_secret_value() if secret else None, settings.download_token_lifetime
    )
    # Workload tokens are checked against tracking's own database, not over HTTP, and
    # uncached: tracking owns the pipeline endpoints they are for, and there a token stops
    # on the very next request after its object ended (one primary-key read per request).
    workload_scopes = WorkloadScopes(
        LocalScopeSource(state["sessionmaker"], settings.workload_token_expiration_leeway),
        ttl=0,
    )
    box = settings.secret_box()
    component_secrets = ComponentSecrets(box)
    secret_cipher = SecretCipher(box)
    egress = EgressProxy(
        AddressPolicy(settings.artifact_store_allowed_networks),
        settings.artifact_store_connect_timeout.total_seconds(),
    )
    await egress.start()
    artifact_stores = ArtifactStores(
        component_secrets,
        secret_cipher,
        S3Options(
            connect_timeout=settings.artifact_store_connect_timeout,
            request_timeout=settings.artifact_store_request_timeout,
            retries=settings.artifact_store_retries,
            proxy_url=egress.url,
        ),
        settings.local_store_roots(),
    )
    try:
        yield {
            "users": create_user_directory(settings, state["http"]),
            "downloads": downloads,
            "workload_scopes": workload_scopes,
            "component_secrets": component_secrets,
            "secret_cipher": secret_cipher,
            "cluster_probe": ClusterProbe(
                egress.url, settings.artifact_store_connect_timeout, outside
            ),
            "artifact_stores": artifact_stores,
        }
    finally:
        await egress.close()


def create_app(
    settings: Settings | None = None, *, http_transport: httpx.AsyncBaseTransport | None = None
) -> Starlette:
    settings = settings or Settings()
    return create_service_app(
        settings,
        state_class=TrackingState,
        title="tracking",
        version=PLATFORM_VERSION,
        description=(
            "Projects, stacks, artifacts, artifact versions, code repositories, deployments "
            "and secrets."
        ),
        routes=routes(),
        migrations=MIGRATIONS,
        lifespan=functools.partial(_lifespan, outside=http_transport),
        http_transport=http_transport,
        # Answers carrying a secret's values are kept for idempotent replays encrypted.
        idempotency_cipher=box.cipher if (box := settings.secret_box()) else None,
    )
