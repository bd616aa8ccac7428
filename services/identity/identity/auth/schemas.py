"""The token endpoint's form and answers (OAuth2, in the reference's shapes)."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict


class GrantType(StrEnum):
    PASSWORD = "password"
    DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"
    EXTERNAL = "zenml-external"
    API_KEY = "zenml-api-key"
    # Ours: services authenticate to each other with identity-issued tokens.
    CLIENT_CREDENTIALS = "client_credentials"


class LoginForm(BaseModel):
    """``Body_token_api_v1_login_post``: every field optional; ``client_secret`` is ours,
    for the client-credentials grant."""

    model_config = ConfigDict(extra="ignore")

    grant_type: str | None = None
    username: str | None = None
    password: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    device_code: str | None = None


class OAuthTokenResponse(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_in: int | None = None
    refresh_token: str | None = None
    csrf_token: str | None = None
    scope: str | None = None
    device_id: uuid.UUID | None = None
    device_metadata: dict[str, Any] | None = None


class OAuthErrorResponse(BaseModel):
    error: str
    error_description: str | None = None
    error_uri: str | None = None
