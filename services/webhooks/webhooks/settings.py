"""The webhooks service's settings."""

from __future__ import annotations

from pydantic_settings import SettingsConfigDict

from shared.settings import ServiceSettings


class Settings(ServiceSettings):
    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False)

    service_name: str = "webhooks"
    database_url: str = "sqlite+aiosqlite:///./.local/data/webhooks.db"
