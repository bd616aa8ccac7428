"""The agent-accounts service: accounts, API keys, workers and task tokens of the agent
server."""

from __future__ import annotations

from pathlib import Path

import httpx
from starlette.applications import Starlette

from agent_accounts.settings import Settings
from shared.app import create_service_app

MIGRATIONS = Path(__file__).parent / "migrations"

# The agent-run server we are wire-compatible with (kitaru).
AGENT_SERVER_VERSION = "0.27.2"


def create_app(
    settings: Settings | None = None, *, http_transport: httpx.AsyncBaseTransport | None = None
) -> Starlette:
    settings = settings or Settings()
    return create_service_app(
        settings,
        title="agent-accounts",
        version=AGENT_SERVER_VERSION,
        description="Accounts, API keys, workers and task tokens of the agent-run server.",
        routes=[],
        migrations=MIGRATIONS,
        http_transport=http_transport,
    )
