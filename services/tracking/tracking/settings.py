"""The tracking service's settings."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import SettingsConfigDict

from shared.settings import ServiceSettings


class Settings(ServiceSettings):
    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False)

    service_name: str = "tracking"
    database_url: str = "sqlite+aiosqlite:///./.local/data/tracking.db"
    # Root of the default stack's local artifact store (created at first start).
    artifact_store_root: Path = Path(".local/artifacts")
