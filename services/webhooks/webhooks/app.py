"""The webhooks service: project-scoped webhooks, signed intake and durable hand-off to
consumers."""

from __future__ import annotations

from pathlib import Path

import httpx
from starlette.applications import Starlette

from shared.app import create_service_app
from shared.settings import PLATFORM_VERSION
from webhooks.settings import Settings

MIGRATIONS = Path(__file__).parent / "migrations"


def create_app(
    settings: Settings | None = None, *, http_transport: httpx.AsyncBaseTransport | None = None
) -> Starlette:
    settings = settings or Settings()
    return create_service_app(
        settings,
        title="webhooks",
        version=PLATFORM_VERSION,
        description="Project-scoped webhooks, signed intake and durable hand-off to consumers.",
        routes=[],
        migrations=MIGRATIONS,
        http_transport=http_transport,
    )
