"""What the command-line tools read from the environment (the only module that does).

``SERVICE_API_URL``, ``SERVICE_API_KEY``, ``SERVICE_API_TOKEN``, ``SERVICE_CONFIG_DIR`` and
``SERVICE_NON_INTERACTIVE``, as kitaru's ``KITARU_*`` client variables. The read-only
client builds :class:`ClientSettings`, which has no field for a key or a token, so it
cannot pick one up from the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

APP_DIR = "agent-run"


class ClientSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SERVICE_", env_file=None, extra="ignore", case_sensitive=False
    )

    api_url: str | None = None
    config_dir: Path | None = None
    xdg_config_home: Path | None = Field(
        default=None, validation_alias=AliasChoices("XDG_CONFIG_HOME")
    )

    @field_validator("api_url", "config_dir", "xdg_config_home", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    def credentials_dir(self) -> Path:
        """``SERVICE_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/agent-run``, else
        ``~/.config/agent-run``."""
        if self.config_dir is not None:
            return self.config_dir
        if self.xdg_config_home is not None and self.xdg_config_home.is_absolute():
            return self.xdg_config_home / APP_DIR
        return Path.home() / ".config" / APP_DIR


class CliSettings(ClientSettings):
    # Both override stored credentials; the token wins over the key (the worker, which
    # needs the key itself, reads only the key).
    api_key: SecretStr | None = None
    api_token: SecretStr | None = None
    non_interactive: bool = False

    @field_validator("api_key", "api_token", mode="before")
    @classmethod
    def _empty_secret_is_unset(cls, value: object) -> object:
        return None if value == "" else value


def inherited_environment() -> dict[str, str]:
    """The worker's own environment, which its task processes start from."""
    return dict(os.environ)
