"""The tracking service: artifacts, artifact versions, code repositories and deployments."""

from __future__ import annotations

from pathlib import Path

import httpx
from starlette.applications import Starlette

from shared.app import create_service_app
from shared.settings import PLATFORM_VERSION
from tracking.settings import Settings

MIGRATIONS = Path(__file__).parent / "migrations"


def create_app(
    settings: Settings | None = None, *, http_transport: httpx.AsyncBaseTransport | None = None
) -> Starlette:
    settings = settings or Settings()
    return create_service_app(
        settings,
        title="tracking",
        version=PLATFORM_VERSION,
        description="Artifacts, artifact versions, code repositories and deployments.",
        routes=[],
        migrations=MIGRATIONS,
        http_transport=http_transport,
    )
