"""The webhooks service: project-scoped webhooks, signed intake and durable hand-off to
consumers (the arq worker in :mod:`webhooks.worker`)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from shared.app import ServiceApp, State, create_service_app
from shared.responses import ErrorStyle
from shared.secret_box import SecretBox
from shared.settings import PLATFORM_VERSION
from shared.users import create_user_directory
from webhooks.core.live import LiveState
from webhooks.core.projects import ProjectDirectory
from webhooks.event.queue import JobQueue
from webhooks.intake import endpoints as intake_endpoints
from webhooks.intake.asgi import IntakeFastPath
from webhooks.intake.cache import WebhookCache
from webhooks.intake.providers import providers
from webhooks.intake.service import IntakeService
from webhooks.settings import Settings
from webhooks.state import WebhooksState
from webhooks.trigger import endpoints as trigger_endpoints
from webhooks.webhook import endpoints as webhook_endpoints

MIGRATIONS = Path(__file__).parent / "migrations"
ERROR_STYLE: ErrorStyle = "platform"


@functools.cache
def routes() -> tuple[BaseRoute, ...]:
    """The service's routes. They depend on no setting and hold no state, so they are
    built once a process and shared by its apps (the tests build an app per test)."""
    return (
        *intake_endpoints.routes(),
        *webhook_endpoints.routes(),
        *trigger_endpoints.routes(),
    )


@asynccontextmanager
async def _lifespan(app: Starlette, state: State) -> AsyncIterator[State]:
    settings: Settings = state["settings"]
    box = SecretBox(settings.webhook_secret_keys)
    expires_ms = int(settings.event_expiry.total_seconds() * 1000)
    live = LiveState(
        state["redis"], state["keys"], queue=settings.queue_name, expires_ms=expires_ms
    )
    registered = providers(settings.signature_tolerance.total_seconds())
    cache = WebhookCache(state["sessionmaker"], box, live)
    try:
        yield {
            "box": box,
            "live": live,
            "jobs": JobQueue(state["redis"], settings.queue_name, expires_ms=expires_ms),
            "providers": registered,
            "intake": IntakeService(registered, cache, live),
            "projects": ProjectDirectory(
                state["http"], settings.tracking_url, ttl=settings.project_cache_ttl.total_seconds()
            ),
            "users": create_user_directory(settings, state["http"]),
        }
    finally:
        await live.aclose()


def create_app(
    settings: Settings | None = None, *, http_transport: httpx.AsyncBaseTransport | None = None
) -> ServiceApp:
    settings = settings or Settings()
    return create_service_app(
        settings,
        state_class=WebhooksState,
        title="webhooks",
        version=PLATFORM_VERSION,
        description="Project-scoped webhooks, signed intake and durable hand-off to consumers.",
        routes=routes(),
        migrations=MIGRATIONS,
        lifespan=_lifespan,
        http_transport=http_transport,
        error_style=ERROR_STYLE,
        # Outermost: deliveries skip the stack the management API needs (see its module).
        front=functools.partial(
            IntakeFastPath,
            max_body_size=settings.max_body_size,
            server_header=str(settings.server_id),
            error_style=ERROR_STYLE,
        ),
    )
