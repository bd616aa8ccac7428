"""The agent-accounts service's settings (environment prefix SERVICE_)."""

from __future__ import annotations

from pydantic_settings import SettingsConfigDict

from shared.settings import ServiceSettings


class Settings(ServiceSettings):
    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False, env_prefix="SERVICE_")

    service_name: str = "agent-accounts"
    database_url: str = "sqlite+aiosqlite:///./.local/data/agent-accounts.db"
